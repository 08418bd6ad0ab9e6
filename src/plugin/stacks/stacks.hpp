// filter.pyust.stacks: forwards every message unchanged and in order, and follows each
// python:* event with a `pyust:stack` event (same time, payload `depth` and `stack`, the
// thread's frames "outer;inner") so that babeltrace2's text sink shows each Python event's stack.
//
// Why a companion event rather than a rewritten copy of the python:* event: copying an event
// means copying its whole trace IR (stream class, contexts, packets, every field class and
// field) into a new trace class, for every stream. A companion stream per upstream stream, with
// one small event class, leaves every original message untouched (other sinks and filters see
// exactly the upstream trace) and needs no packets. The companion stream uses a clock class
// identical to the upstream one, so its events correlate with the originals.
//
// Each function below is the noexcept bridge of one C callback: it converts exceptions into a
// status and an error cause.
#pragma once

#include <babeltrace2/babeltrace.h>

namespace pyust::plugin::stacks {

// Component initialization: one input port "in", one output port "out". Parameter:
// raw-names=yes names native frames by their symbols (src/analysis/native_names.hpp).
bt_component_class_initialize_method_status
initialize(bt_self_component_filter* self, bt_self_component_filter_configuration* configuration,
           const bt_value* params, void* data) noexcept;

// Message iterator initialization: creates the upstream iterator on port "in".
bt_message_iterator_class_initialize_method_status
iterator_initialize(bt_self_message_iterator* self,
                    bt_self_message_iterator_configuration* configuration,
                    bt_self_component_port_output* port) noexcept;

// Returns the next messages: the upstream's, each python:* event followed by its stack event.
bt_message_iterator_class_next_method_status iterator_next(bt_self_message_iterator* self,
                                                           bt_message_array_const messages,
                                                           uint64_t capacity,
                                                           uint64_t* count) noexcept;

// Releases the iterator's state.
void iterator_finalize(bt_self_message_iterator* self) noexcept;

} // namespace pyust::plugin::stacks
