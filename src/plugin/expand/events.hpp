// Event construction for filter.pyust.expand: the event messages of its own (a record's
// python:call, python:return, python:line, python:task, python:task_step or python:task_end, a
// batch's context source), made of the upstream event classes of the batch's stream class.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "plugin/common/bt_util.hpp"
#include "plugin/expand/classes.hpp"
#include "plugin/expand/records.hpp"

namespace pyust::plugin::expand {

struct Run;

// The qualname of each code id, from the latest python:code event of the id: all that expand
// needs to name a python:call (the reports' model keeps a code's whole registration:
// analysis::CodeNames).
using QualnameById = std::unordered_map<std::uint64_t, std::string>;

// A new event message of event_class at clock value, in packet (or on stream when its class
// has no packets), or null (out of memory). Precondition: event_class belongs to the stream
// class of target; packet is open when target.has_packets, else stream is active. noexcept.
inline bt_message* create_event(bt_self_message_iterator* self, const Target& target,
                                const bt_event_class* event_class, const bt_packet* packet,
                                const bt_stream* stream, std::uint64_t value) noexcept
{
    return target.has_packets
               ? bt_message_event_create_with_packet_and_default_clock_snapshot(self, event_class,
                                                                                packet, value)
               : bt_message_event_create_with_default_clock_snapshot(self, event_class, stream,
                                                                     value);
}

// The event message of a record of run, in packet on stream (StreamTable::place()): the common
// context of the run's context source with vpid/vtid set to the run's pid/tid, the payload from
// the record (a call's name from names, "?" when its id has none). Preconditions: run has a
// target and a context (with python:task for a task, python:task_step for a task step,
// python:task_end for a task end);
// stream is not null. Throws BtError, std::bad_alloc.
MessageRef record_event(bt_self_message_iterator* self, const Run& run, const Record& record,
                        const bt_packet* packet, const bt_stream* stream,
                        const QualnameById& names);

} // namespace pyust::plugin::expand
