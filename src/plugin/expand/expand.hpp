// filter.pyust.expand: turns the python:batch events of pyust's fast mode back
// into the python:call, python:return, python:line, python:task,
// python:task_step and python:task_end events the standard mode records, in
// time order with every other message, so that any sink (sink.pyust.report,
// sink.text.pretty, sink.ctf.fs for Trace Compass) sees a standard-mode trace.
//
// - A batch's records (tracepoints/python_tp.h, decoded by records.hpp) become
//   event messages of the upstream event classes python:call/return/line/
//   task/task_step/task_end of the batch's stream class, in the packet open on the
//   batch's stream at their time (else on another stream of the same class
//   that has one). The common context is the batch's, with vpid/vtid set to
//   its pid/tid; a call's name is the qualname of the latest python:code event
//   of its id ("?" when none).
// - python:batch and python:horizon events are dropped; every other message is
//   forwarded as is.
// - Order: records arrive late (a batch is written after them), so messages
//   wait in a queue ordered by (time, arrival) until every fast-mode process's
//   latest python:horizon has passed them; a process whose horizon lags the
//   input by more than `max-delay` ns stops holding the queue. Nothing waits
//   when no process is in fast mode.
// - Records the tracer lost (a gap in a thread's `first`), records of
//   malformed batches and records that came too late to be put in order
//   become discarded-events messages (and a line on standard error).
// - When upstream fails (a damaged trace), everything held goes out first, in
//   order, then upstream's error.
//
// Each function below is the noexcept bridge of one C callback.
#pragma once

#include <babeltrace2/babeltrace.h>

namespace pyust::plugin::expand {

// Component initialization: ports "in" and "out"; parameters max-delay (ns, >=
// 0, default 5e9) and report-discarded (boolean, default true: missing records
// become discarded-events messages; false: standard error only).
bt_component_class_initialize_method_status
initialize(bt_self_component_filter* self, bt_self_component_filter_configuration* configuration,
           const bt_value* params, void* data) noexcept;

// Releases the component's settings.
void finalize(bt_self_component_filter* self) noexcept;

// Message iterator initialization: creates the upstream iterator on port "in".
bt_message_iterator_class_initialize_method_status
iterator_initialize(bt_self_message_iterator* self,
                    bt_self_message_iterator_configuration* configuration,
                    bt_self_component_port_output* port) noexcept;

// Returns the next messages in time order; "try again" while nothing can be
// released yet.
bt_message_iterator_class_next_method_status iterator_next(bt_self_message_iterator* self,
                                                           bt_message_array_const messages,
                                                           uint64_t capacity,
                                                           uint64_t* count) noexcept;

// Releases the iterator's state.
void iterator_finalize(bt_self_message_iterator* self) noexcept;

} // namespace pyust::plugin::expand
