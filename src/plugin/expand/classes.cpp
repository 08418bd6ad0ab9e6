// ClassCache (see classes.hpp): reading event and stream classes by their names.
#include "plugin/expand/classes.hpp"

#include <string>
#include <string_view>
#include <utility>

#include "plugin/common/bt_util.hpp"

namespace pyust::plugin::expand {

const EventInfo& ClassCache::info_of(const bt_event_class* event_class)
{
    return m_infos.get(event_class, read_info);
}

void ClassCache::read_info(const bt_event_class* event_class, EventInfo& info)
{
    const char* name = bt_event_class_get_name(event_class);
    const std::string_view event_name = name ? name : "";
    const bt_field_class* payload = bt_event_class_borrow_payload_field_class_const(event_class);
    if (event_name == "python:code") {
        info.id = find_member(payload, "id");
        info.qualname = find_member(payload, "qualname");
        if (info.id.index >= 0 && info.qualname.index >= 0)
            info.role = Role::code;
    } else if (event_name == "python:horizon") {
        info.pid = find_member(payload, "pid");
        info.is_final = find_member(payload, "final");
        if (info.pid.index >= 0)
            info.role = Role::horizon;
    } else if (event_name == "python:batch") {
        static constexpr struct {
            FieldMember EventInfo::*member;
            const char* name;
        } members[] = {
            {&EventInfo::pid, "pid"},           {&EventInfo::tid, "tid"},
            {&EventInfo::first, "first"},       {&EventInfo::count, "count"},
            {&EventInfo::id_high, "id_high"},   {&EventInfo::begin_tsc, "begin_tsc"},
            {&EventInfo::begin_ns, "begin_ns"}, {&EventInfo::end_tsc, "end_tsc"},
            {&EventInfo::end_ns, "end_ns"},     {&EventInfo::records, "records"},
        };
        for (const auto& entry : members) {
            info.*entry.member = find_member(payload, entry.name);
            if ((info.*entry.member).index < 0)
                throw Error(std::string("Cannot expand python:batch: reason=its payload "
                                        "has no field ") +
                            entry.name + " (not pyust's event model?)");
        }
        info.role = Role::batch;
    }
}

const Target& ClassCache::target_of(const bt_stream_class* stream_class)
{
    const auto found = m_targets.find(stream_class);
    if (found != m_targets.end())
        return found->second;
    return m_targets.emplace(stream_class, read_target(stream_class)).first->second;
}

namespace {

// Sets target's call, ret and line to the event classes python:call, python:return and
// python:line of stream_class (where names it for messages). Throws Error when one is missing,
// std::bad_alloc.
void find_event_classes(const bt_stream_class* stream_class, const std::string& where,
                        Target& target)
{
    const std::uint64_t count = bt_stream_class_get_event_class_count(stream_class);
    for (std::uint64_t i = 0; i < count; ++i) {
        const bt_event_class* event_class =
            bt_stream_class_borrow_event_class_by_index_const(stream_class, i);
        const char* name = bt_event_class_get_name(event_class);
        if (!name)
            continue;
        const std::string_view event_name = name;
        if (event_name == "python:call")
            target.call = event_class;
        else if (event_name == "python:return")
            target.ret = event_class;
        else if (event_name == "python:line")
            target.line = event_class;
        else if (event_name == "python:task")
            target.task = event_class;
        else if (event_name == "python:task_step")
            target.task_step = event_class;
        else if (event_name == "python:task_end")
            target.task_end = event_class;
    }
    for (const auto& [event_class, name] :
         {std::pair{target.call, "python:call"}, std::pair{target.ret, "python:return"},
          std::pair{target.line, "python:line"}}) {
        if (!event_class)
            throw Error(std::string("Cannot expand python:batch: reason=the trace declares "
                                    "python:batch but not ") +
                        name +
                        ", fix=enable python:* (lttng enable-event -u 'python:*') in the "
                        "recording session" +
                        where);
    }
}

// Sets the payload members of target's event classes. Precondition: find_event_classes() found
// the three it requires. Throws Error when one is missing (where names the stream class),
// std::bad_alloc.
void find_payload_members(const std::string& where, Target& target)
{
    const auto payload = [](const bt_event_class* event_class) {
        return bt_event_class_borrow_payload_field_class_const(event_class);
    };
    target.call_id = find_member(payload(target.call), "id");
    target.call_name = find_member(payload(target.call), "name");
    target.ret_id = find_member(payload(target.ret), "id");
    target.ret_unwind = find_member(payload(target.ret), "unwind");
    target.line_id = find_member(payload(target.line), "id");
    target.line_line = find_member(payload(target.line), "line");
    if (target.call_id.index < 0 || target.call_name.index < 0 || target.ret_id.index < 0 ||
        target.ret_unwind.index < 0 || target.line_id.index < 0 || target.line_line.index < 0)
        throw Error("Cannot expand python:batch: reason=python:call, python:return or "
                    "python:line lacks a payload field (not pyust's event model?)" +
                    where);
    if (target.task_step) {
        target.step_task = find_member(payload(target.task_step), "task");
        target.step_resumed = find_member(payload(target.task_step), "resumed");
        target.step_awaited = find_member(payload(target.task_step), "awaited");
        target.step_awaited_id = find_member(payload(target.task_step), "awaited_id");
        target.step_thrown = find_member(payload(target.task_step), "thrown");
        if (target.step_task.index < 0 || target.step_resumed.index < 0 ||
            target.step_awaited.index < 0 || target.step_awaited_id.index < 0 ||
            target.step_thrown.index < 0)
            throw Error("Cannot expand python:batch: reason=python:task_step lacks a payload "
                        "field (not pyust's event model?)" +
                        where);
    }
    if (target.task) {
        target.task_task = find_member(payload(target.task), "task");
        target.task_parent = find_member(payload(target.task), "parent");
        target.task_name = find_member(payload(target.task), "name");
        if (target.task_task.index < 0 || target.task_parent.index < 0 ||
            target.task_name.index < 0)
            throw Error("Cannot expand python:batch: reason=python:task lacks a payload "
                        "field (not pyust's event model?)" +
                        where);
    }
    if (target.task_end) {
        target.end_task = find_member(payload(target.task_end), "task");
        target.end_state = find_member(payload(target.task_end), "state");
        if (target.end_task.index < 0 || target.end_state.index < 0)
            throw Error("Cannot expand python:batch: reason=python:task_end lacks a payload "
                        "field (not pyust's event model?)" +
                        where);
    }
}

} // namespace

Target ClassCache::read_target(const bt_stream_class* stream_class)
{
    Target target;
    const char* stream_class_name = bt_stream_class_get_name(stream_class);
    const std::string where =
        stream_class_name
            ? std::string(", stream class=") + stream_class_name
            : ", stream class id=" + std::to_string(bt_stream_class_get_id(stream_class));
    find_event_classes(stream_class, where, target);
    find_payload_members(where, target);
    const bt_field_class* common =
        bt_stream_class_borrow_event_common_context_field_class_const(stream_class);
    target.vpid = find_member(common, "vpid");
    target.vtid = find_member(common, "vtid");
    const bt_clock_class* clock_class =
        bt_stream_class_borrow_default_clock_class_const(stream_class);
    if (!clock_class)
        throw Error("Cannot expand python:batch: reason=its stream class has no clock" + where);
    target.clock = std::make_unique<Clock>(clock_class);
    target.has_packets = bt_stream_class_supports_packets(stream_class);
    target.has_discarded = bt_stream_class_supports_discarded_events(stream_class);
    target.has_discarded_clock =
        bt_stream_class_discarded_events_have_default_clock_snapshots(stream_class);
    return target;
}

} // namespace pyust::plugin::expand
