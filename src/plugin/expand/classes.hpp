// Class discovery for filter.pyust.expand: what it reads of an upstream event class (the
// python:code, python:batch and python:horizon payload members) and what it makes a stream
// class's records into (its python:call/return/line/task/task_step/task_end event classes, their
// members, its clock), each looked up once per class and kept for the iterator's life.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "plugin/common/class_memo.hpp"
#include "plugin/common/fields.hpp"
#include "plugin/expand/clock.hpp"

namespace pyust::plugin::expand {

// What the filter reads of an upstream event class.
enum class Role : std::uint8_t { other, code, batch, horizon };

struct EventInfo {
    Role role = Role::other;
    FieldMember id, qualname; // code
    FieldMember pid, tid, first, count, id_high, begin_tsc, begin_ns, end_tsc,
        end_ns;           // batch
    FieldMember records;  // batch
    FieldMember is_final; // horizon (and pid)
};

// What the filter makes the records of one upstream stream class into.
struct Target {
    const bt_event_class* call = nullptr;
    const bt_event_class* ret = nullptr;
    const bt_event_class* line = nullptr;
    // python:task, python:task_step and python:task_end, null in a trace without them (recorded
    // by a pyust older than asyncio tasks, or without the events enabled): those records are
    // dropped.
    const bt_event_class* task = nullptr;
    const bt_event_class* task_step = nullptr;
    const bt_event_class* task_end = nullptr;
    FieldMember call_id, call_name, ret_id, ret_unwind, line_id, line_line;
    FieldMember step_task, step_resumed, step_awaited, step_awaited_id, step_thrown;
    FieldMember end_task, end_state;
    FieldMember task_task, task_parent, task_name;
    FieldMember vpid, vtid; // in the common context
    std::unique_ptr<Clock> clock;
    bool has_packets = false;
    bool has_discarded = false;
    bool has_discarded_clock = false;
};

// The EventInfo of each event class and the Target of each stream class met so far. The
// references it returns stay valid for its life (the classes must outlive it too).
class ClassCache {
public:
    // The EventInfo of an event class, read on first sight (the latest one is remembered: a
    // trace's events mostly come in runs of one class). Throws Error when a python:batch
    // class lacks a payload member (nothing is kept for it then), std::bad_alloc.
    const EventInfo& info_of(const bt_event_class* event_class);

    // The Target of a stream class, read on first sight. Throws Error when the class lacks
    // python:call, python:return or python:line, one of their payload members, or a default
    // clock (nothing is kept for it then), std::bad_alloc.
    const Target& target_of(const bt_stream_class* stream_class);

private:
    // Reads an event class's EventInfo into info (a new entry of m_infos). Throws Error when
    // a python:batch class lacks a payload member.
    static void read_info(const bt_event_class* event_class, EventInfo& info);
    // Reads a stream class's Target. Throws Error as target_of(), std::bad_alloc.
    static Target read_target(const bt_stream_class* stream_class);

    ClassMemo<bt_event_class, EventInfo> m_infos;
    std::unordered_map<const bt_stream_class*, Target> m_targets;
};

} // namespace pyust::plugin::expand
