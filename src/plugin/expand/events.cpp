// record_event() (see events.hpp): a record's event message, field by field.
#include "plugin/expand/events.hpp"

#include "plugin/expand/field_copy.hpp"
#include "plugin/expand/release_queue.hpp"

namespace pyust::plugin::expand {

MessageRef record_event(bt_self_message_iterator* self, const Run& run, const Record& record,
                        const bt_packet* packet, const bt_stream* stream, const QualnameById& names)
{
    const Target& target = *run.target;
    const bt_event_class* event_class = record.kind == RecordKind::call        ? target.call
                                        : record.kind == RecordKind::line      ? target.line
                                        : record.kind == RecordKind::task_step ? target.task_step
                                        : record.kind == RecordKind::task_end  ? target.task_end
                                        : record.kind == RecordKind::task      ? target.task
                                                                               : target.ret;
    bt_message* created = create_event(self, target, event_class, packet, stream, record.value);
    MessageRef message(check_new(created, "Cannot create an expanded event message"));
    bt_event* event = bt_message_event_borrow_event(created);
    if (const bt_field* context = bt_event_borrow_common_context_field_const(
            bt_message_event_borrow_event_const(run.context->message.get()))) {
        bt_field* out = bt_event_borrow_common_context_field(event);
        copy_field(out, context);
        if (target.vpid.index >= 0)
            set_int(member_of(out, target.vpid), run.pid);
        if (target.vtid.index >= 0)
            set_int(member_of(out, target.vtid), run.tid);
    }
    bt_field* payload = bt_event_borrow_payload_field(event);
    switch (record.kind) {
    case RecordKind::call: {
        set_int(member_of(payload, target.call_id), static_cast<std::int64_t>(record.id));
        const auto name = names.find(record.id);
        check(bt_field_string_set_value(member_of(payload, target.call_name),
                                        name != names.end() ? name->second.c_str() : "?"),
              "Cannot set the name of an expanded python:call");
        break;
    }
    case RecordKind::ret:
    case RecordKind::ret_unwind:
        set_int(member_of(payload, target.ret_id), static_cast<std::int64_t>(record.id));
        set_int(member_of(payload, target.ret_unwind), record.kind == RecordKind::ret_unwind);
        break;
    case RecordKind::line:
        set_int(member_of(payload, target.line_id), static_cast<std::int64_t>(record.id));
        set_int(member_of(payload, target.line_line), record.line);
        break;
    case RecordKind::task_step:
        set_int(member_of(payload, target.step_task), static_cast<std::int64_t>(record.task));
        set_int(member_of(payload, target.step_resumed), record.resumed);
        set_int(member_of(payload, target.step_awaited), record.awaited);
        set_int(member_of(payload, target.step_awaited_id),
                static_cast<std::int64_t>(record.awaited_id));
        set_int(member_of(payload, target.step_thrown), record.thrown);
        break;
    case RecordKind::task_end:
        set_int(member_of(payload, target.end_task), static_cast<std::int64_t>(record.task));
        set_int(member_of(payload, target.end_state), record.state);
        break;
    case RecordKind::task: {
        set_int(member_of(payload, target.task_task), static_cast<std::int64_t>(record.task));
        set_int(member_of(payload, target.task_parent), static_cast<std::int64_t>(record.parent));
        bt_field* name = member_of(payload, target.task_name);
        bt_field_string_clear(name);
        check(bt_field_string_append_with_length(name, record.name, record.name_size),
              "Cannot set the name of an expanded python:task");
        break;
    }
    }
    return message;
}

} // namespace pyust::plugin::expand
