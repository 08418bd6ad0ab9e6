// Decoding of python:* events (see event_reader.hpp).
#include "plugin/common/event_reader.hpp"

#include <cstring>

#include "plugin/common/bt_util.hpp"
#include "plugin/common/fields.hpp"

namespace pyust::plugin {

namespace {

#include "plugin/common/syscall_names.inc"

// The kernel events of the model, by LTTng's and perf's names; syscall gets the system call's
// name when the event's name carries it.
PythonKind kernel_kind(std::string_view name, std::string& syscall)
{
    static constexpr struct {
        std::string_view prefix;
        PythonKind kind;
    } prefixes[] = {
        {"syscall_entry_", PythonKind::syscall_entry},
        {"syscall_exit_", PythonKind::syscall_exit},
        {"compat_syscall_entry_", PythonKind::syscall_entry},
        {"compat_syscall_exit_", PythonKind::syscall_exit},
        {"syscalls:sys_enter_", PythonKind::syscall_entry},
        {"syscalls:sys_exit_", PythonKind::syscall_exit},
    };
    if (name == "raw_syscalls:sys_enter")
        return PythonKind::syscall_entry;
    if (name == "raw_syscalls:sys_exit")
        return PythonKind::syscall_exit;
    if (name == "sched_switch" || name == "sched:sched_switch")
        return PythonKind::sched_switch;
    for (const auto& entry : prefixes) {
        if (name.substr(0, entry.prefix.size()) == entry.prefix) {
            syscall.assign(name.substr(entry.prefix.size()));
            return entry.kind;
        }
    }
    return PythonKind::other;
}

// The name of system call number, or "syscall_NUMBER". Never empty.
std::string_view syscall_name(std::int64_t number, std::string& buffer)
{
    if (number >= 0 && static_cast<std::uint64_t>(number) < syscall_name_count &&
        syscall_names[number])
        return syscall_names[number];
    buffer = "syscall_" + std::to_string(number);
    return buffer;
}

PythonKind kind_of(const char* name) noexcept
{
    static constexpr struct {
        const char* name;
        PythonKind kind;
    } kinds[] = {
        {"python:call", PythonKind::call},         {"python:return", PythonKind::ret},
        {"python:line", PythonKind::line},         {"python:c_call", PythonKind::c_call},
        {"python:c_return", PythonKind::c_return}, {"python:code", PythonKind::code},
        {"python:thread", PythonKind::thread},     {"python:process", PythonKind::process},
        {"python:batch", PythonKind::batch},       {"python:lost_start", PythonKind::lost_start},
        {"python:task", PythonKind::task},         {"python:task_step", PythonKind::task_step},
        {"python:task_end", PythonKind::task_end},
    };
    static constexpr struct {
        const char* name;
        PythonKind kind;
    } native_kinds[] = {
        {"lttng_ust_cyg_profile:func_entry", PythonKind::native_entry},
        {"lttng_ust_cyg_profile:func_exit", PythonKind::native_exit},
        {"lttng_ust_cyg_profile_fast:func_entry", PythonKind::native_entry},
        {"lttng_ust_cyg_profile_fast:func_exit", PythonKind::native_exit},
    };
    if (name && std::strncmp(name, "lttng_ust_cyg_profile", 21) == 0) {
        for (const auto& entry : native_kinds)
            if (std::strcmp(name, entry.name) == 0)
                return entry.kind;
        return PythonKind::other;
    }
    if (!name || std::strncmp(name, "python:", 7) != 0)
        return PythonKind::other;
    for (const auto& entry : kinds)
        if (std::strcmp(name, entry.name) == 0)
            return entry.kind;
    return PythonKind::other;
}

} // namespace

analysis::Timestamp ns_from_origin(const bt_clock_snapshot* snapshot)
{
    std::int64_t ns = 0;
    if (bt_clock_snapshot_get_ns_from_origin(snapshot, &ns) !=
        BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK) {
        bt_current_thread_clear_error();
        throw Error("Cannot convert a clock value to ns from origin: value=" +
                    std::to_string(bt_clock_snapshot_get_value(snapshot)) + " (overflow)");
    }
    return ns;
}

const EventReader::ClassInfo& EventReader::class_info(const bt_event_class* event_class)
{
    return m_classes.get(event_class, read_class_info);
}

void EventReader::read_class_info(const bt_event_class* event_class, ClassInfo& info)
{
    const char* event_name = bt_event_class_get_name(event_class);
    info.kind = kind_of(event_name);
    if (info.kind == PythonKind::other && event_name)
        info.kind = kernel_kind(event_name, info.syscall);
    if (info.kind == PythonKind::batch) {
        // Nothing to look up: decode() refuses its events.
    } else if (info.kind == PythonKind::syscall_entry || info.kind == PythonKind::syscall_exit ||
               info.kind == PythonKind::sched_switch) {
        kernel_class_info(event_class, info);
    } else if (info.kind != PythonKind::other) {
        const bt_stream_class* stream_class = bt_event_class_borrow_stream_class_const(event_class);
        info.has_clock = bt_stream_class_borrow_default_clock_class_const(stream_class);
        const bt_field_class* common =
            bt_stream_class_borrow_event_common_context_field_class_const(stream_class);
        info.vpid = find_member(common, "vpid");
        info.vtid = find_member(common, "vtid");
        const bool is_native =
            info.kind == PythonKind::native_entry || info.kind == PythonKind::native_exit;
        if (is_native && info.vpid.index >= 0 && info.vtid.index >= 0) {
            info.ip = find_member(common, "ip");
            info.debug_info = find_member(common, "debug_info");
            if (info.debug_info.index >= 0) {
                const bt_field_class* debug_info =
                    bt_field_class_structure_member_borrow_field_class_const(
                        bt_field_class_structure_borrow_member_by_index_const(
                            common, static_cast<std::uint64_t>(info.debug_info.index)));
                if (bt_field_class_get_type(debug_info) == BT_FIELD_CLASS_TYPE_STRUCTURE) {
                    info.debug_bin = find_member(debug_info, "bin").index;
                    info.debug_func = find_member(debug_info, "func").index;
                }
            }
        }
        if (info.vpid.index < 0 || info.vtid.index < 0) {
            const bt_field_class* specific =
                bt_event_class_borrow_specific_context_field_class_const(event_class);
            info.vpid = find_member(specific, "vpid");
            info.vtid = find_member(specific, "vtid");
            info.key_scope = ClassInfo::KeyScope::specific;
        }
        if ((info.vpid.index < 0 || info.vtid.index < 0) && is_native) {
            // Native frames without a thread cannot join a stack: not ours to judge.
            info.kind = PythonKind::other;
            return;
        }
        if (info.vpid.index < 0 || info.vtid.index < 0) {
            throw Error(std::string("Cannot rebuild stacks without the vpid and vtid "
                                    "contexts: event=") +
                        event_name + ", fix=lttng add-context -u -t vpid -t vtid before tracing");
        }
        const bt_field_class* payload =
            bt_event_class_borrow_payload_field_class_const(event_class);
        info.id = find_member(payload, "id");
        info.name = find_member(payload, "name");
        switch (info.kind) {
        case PythonKind::line:
            info.number = find_member(payload, "line");
            break;
        case PythonKind::c_call:
            info.owner = find_member(payload, "owner");
            break;
        case PythonKind::code:
            info.number = find_member(payload, "first_line");
            info.owner = find_member(payload, "module");
            info.name = find_member(payload, "qualname");
            info.file = find_member(payload, "file");
            info.code_name = find_member(payload, "name");
            break;
        case PythonKind::thread:
            info.number = find_member(payload, "tid");
            break;
        case PythonKind::process:
            info.name = find_member(payload, "command"); // absent in older traces
            break;
        case PythonKind::lost_start:
            info.number = find_member(payload, "lost_ns");
            break;
        case PythonKind::native_entry:
        case PythonKind::native_exit:
            info.addr = find_member(payload, "addr");
            break;
        case PythonKind::task:
            info.id = find_member(payload, "task");
            info.number = find_member(payload, "parent");
            break;
        case PythonKind::task_step:
            info.id = find_member(payload, "task");
            info.number = find_member(payload, "resumed");
            info.awaited = find_member(payload, "awaited");
            info.awaited_id = find_member(payload, "awaited_id");
            info.thrown = find_member(payload, "thrown");
            break;
        case PythonKind::task_end:
            info.id = find_member(payload, "task");
            info.number = find_member(payload, "state");
            break;
        default:
            break;
        }
        const bool needs_id = info.kind == PythonKind::code || info.kind == PythonKind::call ||
                              info.kind == PythonKind::ret || info.kind == PythonKind::line ||
                              info.kind == PythonKind::task || info.kind == PythonKind::task_step ||
                              info.kind == PythonKind::task_end;
        const bool needs_number = info.kind == PythonKind::line || info.kind == PythonKind::code ||
                                  info.kind == PythonKind::thread ||
                                  info.kind == PythonKind::lost_start;
        if ((needs_id && info.id.index < 0) || (needs_number && info.number.index < 0)) {
            throw Error(std::string("Cannot read a python event: event=") + event_name +
                        ", reason=a payload field is missing (not pyust's event model?)");
        }
    }
}

void EventReader::kernel_class_info(const bt_event_class* event_class, ClassInfo& info)
{
    const bt_stream_class* stream_class = bt_event_class_borrow_stream_class_const(event_class);
    info.has_clock = bt_stream_class_borrow_default_clock_class_const(stream_class);
    const bt_field_class* payload = bt_event_class_borrow_payload_field_class_const(event_class);
    // The thread: LTTng's contexts (vpid/vtid, else pid/tid), else perf's payload fields.
    static constexpr struct {
        ClassInfo::KeyScope scope;
        const char* pid;
        const char* tid;
    } places[] = {
        {ClassInfo::KeyScope::common, "vpid", "vtid"},
        {ClassInfo::KeyScope::common, "pid", "tid"},
        {ClassInfo::KeyScope::specific, "vpid", "vtid"},
        {ClassInfo::KeyScope::specific, "pid", "tid"},
        {ClassInfo::KeyScope::payload, "perf_pid", "perf_tid"},
    };
    info.vpid = info.vtid = Member{};
    for (const auto& place : places) {
        const bt_field_class* structure =
            place.scope == ClassInfo::KeyScope::common
                ? bt_stream_class_borrow_event_common_context_field_class_const(stream_class)
            : place.scope == ClassInfo::KeyScope::specific
                ? bt_event_class_borrow_specific_context_field_class_const(event_class)
                : payload;
        info.vpid = find_member(structure, place.pid);
        info.vtid = find_member(structure, place.tid);
        if (info.vpid.index >= 0 && info.vtid.index >= 0) {
            info.key_scope = place.scope;
            break;
        }
    }
    if (info.vpid.index < 0 || info.vtid.index < 0) {
        info.kind = PythonKind::other; // no thread to put it on
        return;
    }
    if (info.kind == PythonKind::sched_switch) {
        info.prev_tid = find_member(payload, "prev_tid");
        if (info.prev_tid.index < 0)
            info.prev_tid = find_member(payload, "prev_pid");
        info.next_tid = find_member(payload, "next_tid");
        if (info.next_tid.index < 0)
            info.next_tid = find_member(payload, "next_pid");
    } else if (info.syscall.empty()) {
        info.id = find_member(payload, "id");
        if (info.id.index < 0)
            info.syscall = "syscall"; // raw_syscalls without its number: still a frame
    }
}

bool EventReader::decode(const bt_message* message, PythonEvent& out)
{
    const bt_event* event = bt_message_event_borrow_event_const(message);
    const ClassInfo& info = class_info(bt_event_borrow_class_const(event));
    if (info.kind == PythonKind::other)
        return false;
    if (info.kind == PythonKind::batch)
        throw Error("Cannot read python:batch events (fast mode) as they are: reason=they hold "
                    "many records each, fix=put filter.pyust.expand in front (babeltrace2 TRACE "
                    "-c filter.pyust.expand -c sink.pyust.report ...)");
    out.kind = info.kind;
    const bt_field* context = info.key_scope == ClassInfo::KeyScope::specific
                                  ? bt_event_borrow_specific_context_field_const(event)
                              : info.key_scope == ClassInfo::KeyScope::payload
                                  ? bt_event_borrow_payload_field_const(event)
                                  : bt_event_borrow_common_context_field_const(event);
    out.key.pid = read_int(context, info.vpid);
    out.key.tid = read_int(context, info.vtid);
    if (info.kind == PythonKind::syscall_entry || info.kind == PythonKind::syscall_exit ||
        info.kind == PythonKind::sched_switch) {
        out.ts = info.has_clock
                     ? ns_from_origin(bt_message_event_borrow_default_clock_snapshot_const(message))
                     : 0;
        out.stream = stream_index(bt_event_borrow_stream_const(event));
        const bt_field* payload = bt_event_borrow_payload_field_const(event);
        out.next_tid = info.next_tid.index >= 0 ? read_int(payload, info.next_tid) : -1;
        if (info.kind == PythonKind::sched_switch)
            out.next_tid = thread_switched_to(info, payload, out.key.tid, out.next_tid);
        if (info.kind == PythonKind::syscall_entry)
            out.name = info.id.index >= 0
                           ? syscall_name(read_int(payload, info.id), m_syscall_buffer)
                           : std::string_view(info.syscall);
        return true;
    }
    out.ts = info.has_clock
                 ? ns_from_origin(bt_message_event_borrow_default_clock_snapshot_const(message))
                 : 0;
    out.stream = stream_index(bt_event_borrow_stream_const(event));
    const bt_field* payload = bt_event_borrow_payload_field_const(event);
    if (info.id.index >= 0)
        out.id = static_cast<std::uint64_t>(read_int(payload, info.id));
    out.number =
        info.number.index >= 0 ? static_cast<std::uint64_t>(read_int(payload, info.number)) : 0;
    if (info.kind == PythonKind::task_step) {
        out.awaited = info.awaited.index >= 0
                          ? static_cast<std::uint8_t>(read_int(payload, info.awaited))
                          : 0;
        out.awaited_id = info.awaited_id.index >= 0
                             ? static_cast<std::uint64_t>(read_int(payload, info.awaited_id))
                             : 0;
        out.thrown =
            info.thrown.index >= 0 ? static_cast<std::uint8_t>(read_int(payload, info.thrown)) : 0;
    }
    out.name = read_string(payload, info.name);
    out.owner = read_string(payload, info.owner);
    out.file = read_string(payload, info.file);
    out.code_name = read_string(payload, info.code_name);
    if (info.kind == PythonKind::native_entry || info.kind == PythonKind::native_exit) {
        out.has_address = info.addr.index >= 0 || info.ip.index >= 0;
        out.address = info.addr.index >= 0
                          ? static_cast<std::uint64_t>(read_int(payload, info.addr))
                      : info.ip.index >= 0 ? static_cast<std::uint64_t>(read_int(context, info.ip))
                                           : 0;
        out.func = {};
        out.bin = {};
        if (info.debug_info.index >= 0 && info.kind == PythonKind::native_entry) {
            const bt_field* debug_info = member_field(context, info.debug_info.index);
            if (info.debug_func >= 0)
                out.func = read_string(debug_info, Member{info.debug_func, false});
            if (info.debug_bin >= 0)
                out.bin = read_string(debug_info, Member{info.debug_bin, false});
        }
    }
    return true;
}

std::int64_t EventReader::thread_switched_to(const ClassInfo& info, const bt_field* payload,
                                             std::int64_t tid, std::int64_t next_tid)
{
    if (info.prev_tid.index >= 0) {
        const std::int64_t kernel_tid = read_int(payload, info.prev_tid);
        if (kernel_tid > 0)
            m_tid_of_kernel_tid[kernel_tid] = tid;
    }
    if (next_tid <= 0)
        return next_tid;
    const auto it = m_tid_of_kernel_tid.find(next_tid);
    return it != m_tid_of_kernel_tid.end() ? it->second : next_tid;
}

bool EventReader::apply_foreign_switch(analysis::StackModel& model, const PythonEvent& event)
{
    if (event.kind != PythonKind::sched_switch || model.has_thread(event.key))
        return false;
    if (event.next_tid > 0)
        model.on_switch_in(event.next_tid, event.ts);
    return true;
}

bool EventReader::apply_names(analysis::StackModel& model, const PythonEvent& event)
{
    if (event.kind == PythonKind::code) {
        model.on_code(event.id, std::string(event.owner), std::string(event.name),
                      std::string(event.file), static_cast<std::uint32_t>(event.number),
                      std::string(event.code_name));
        return true;
    }
    if (event.kind == PythonKind::call)
        return model.on_call_name(event.id, event.name);
    return false;
}

analysis::Thread& EventReader::thread_of(analysis::StackModel& model, const PythonEvent& event)
{
    analysis::Thread& thread = model.thread_at(event.key, event.ts, event.stream);
    if (event.kind != PythonKind::syscall_entry && event.kind != PythonKind::syscall_exit &&
        event.kind != PythonKind::sched_switch)
        model.on_user_space(thread);
    return thread;
}

void EventReader::apply(analysis::StackModel& model, analysis::Thread& thread,
                        const PythonEvent& event)
{
    switch (event.kind) {
    case PythonKind::call:
        model.on_call(thread, event.id);
        break;
    case PythonKind::ret:
        model.on_return(thread, event.id);
        break;
    case PythonKind::line:
        model.on_line(thread, event.id, static_cast<std::uint32_t>(event.number));
        break;
    case PythonKind::c_call:
        model.on_c_call(thread, event.name, event.owner);
        break;
    case PythonKind::c_return:
        model.on_c_return(thread);
        break;
    case PythonKind::thread:
        model.on_thread_name(
            analysis::ThreadKey{event.key.pid, static_cast<std::int64_t>(event.number)},
            std::string(event.name));
        break;
    case PythonKind::native_entry:
        model.on_native_entry(thread, event.address, event.func, event.bin);
        break;
    case PythonKind::native_exit:
        model.on_native_exit(thread, event.address, event.has_address);
        break;
    case PythonKind::syscall_entry:
        model.on_syscall_entry(thread, event.name);
        break;
    case PythonKind::syscall_exit:
        model.on_syscall_exit(thread);
        break;
    case PythonKind::sched_switch:
        model.on_switch_out(thread);
        if (event.next_tid > 0 && event.next_tid != event.key.tid)
            model.on_switch_in(event.next_tid, event.ts);
        break;
    case PythonKind::lost_start:
        model.on_lost_start(event.key.pid, event.ts, event.number);
        break;
    case PythonKind::task:
        model.on_task(thread, event.id, event.number, event.name);
        break;
    case PythonKind::task_step:
        model.on_task_step(thread, event.id, static_cast<std::uint32_t>(event.number),
                           event.awaited, event.awaited_id, event.thrown);
        break;
    case PythonKind::task_end:
        model.on_task_end(thread, event.id, static_cast<std::uint8_t>(event.number));
        break;
    case PythonKind::code: // apply_names() took its names
    case PythonKind::process:
    case PythonKind::batch:
    case PythonKind::other:
        break;
    }
}

void EventReader::read_discarded(const bt_message* message, analysis::StackModel& model)
{
    const bt_stream* stream = bt_message_discarded_events_borrow_stream_const(message);
    analysis::Timestamp begin = 0;
    analysis::Timestamp end = 0;
    if (bt_stream_class_discarded_events_have_default_clock_snapshots(
            bt_stream_borrow_class_const(stream))) {
        begin = ns_from_origin(
            bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(message));
        end = ns_from_origin(
            bt_message_discarded_events_borrow_end_default_clock_snapshot_const(message));
    }
    std::uint64_t count = 0;
    if (bt_message_discarded_events_get_count(message, &count) !=
        BT_PROPERTY_AVAILABILITY_AVAILABLE)
        count = 0;
    model.on_discarded(stream_index(stream), begin, end, count);
}

std::uint64_t EventReader::stream_index(const bt_stream* stream)
{
    if (stream == m_last_stream)
        return m_last_stream_index;
    const auto [it, is_new] = m_streams.try_emplace(stream, m_stream_names.size());
    if (is_new) {
        const char* name = bt_stream_get_name(stream);
        // A stream's name is its file's path: anything a file system holds.
        m_stream_names.push_back(name ? analysis::printable(name)
                                      : "stream id " + std::to_string(bt_stream_get_id(stream)));
    }
    m_last_stream = stream;
    m_last_stream_index = it->second;
    return it->second;
}

} // namespace pyust::plugin
