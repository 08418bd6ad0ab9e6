// Reads python:* event messages (tracepoints/python_tp.h), the native frames of lttng-ust's
// cyg-profile helpers (lttng_ust_cyg_profile(_fast):func_entry/func_exit, named by the
// debug_info context field that flt.lttng-utils.debug-info adds), the kernel's system calls
// and sched_switch (LTTng's kernel tracer: syscall_entry_NAME/syscall_exit_NAME and
// sched_switch with the vpid/vtid (or pid/tid) contexts; perf's CTF: raw_syscalls:sys_enter/
// sys_exit, syscalls:sys_enter_NAME/sys_exit_NAME and sched:sched_switch, with perf_pid and
// perf_tid in the payload) and discarded-events messages into the plain values the stack
// model takes. The field positions of each event class are looked up
// once and cached, so that the per-event work is a few borrows and integer reads.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "plugin/common/class_memo.hpp"
#include <vector>

#include "analysis/stack_model.hpp"
#include "plugin/common/fields.hpp"

namespace pyust::plugin {

// The python:* events, and `other` for every other event class.
enum class PythonKind : std::uint8_t {
    other,
    code,
    call,
    ret,
    line,
    c_call,
    c_return,
    thread,
    process,
    native_entry, // lttng_ust_cyg_profile(_fast):func_entry
    native_exit,  // lttng_ust_cyg_profile(_fast):func_exit
    syscall_entry,
    syscall_exit,
    sched_switch,
    batch, // python:batch (fast mode): decode() refuses it, filter.pyust.expand must come first
    lost_start,
    task,      // asyncio
    task_step, // (filter.pyust.expand makes them of a fast trace's records)
    task_end,
};

// One decoded python:* event. The string views point into the message's fields: they live as
// long as the message.
struct PythonEvent {
    PythonKind kind = PythonKind::other;
    analysis::ThreadKey key;      // vpid and vtid of the emitting thread
    analysis::Timestamp ts = 0;   // ns from origin (0 when the stream has no clock)
    std::uint64_t stream = 0;     // the reader's index of the event's stream
    std::uint64_t id = 0;         // code id (code, call, return, line), key (task, task_step,
                                  // task_end)
    std::uint64_t number = 0;     // line (line), first_line (code), tid (thread), lost_ns
                                  // (lost_start), parent (task), resumed (task_step), state
                                  // (task_end)
    std::uint64_t awaited_id = 0; // task_step
    std::uint8_t awaited = 0;     // task_step
    std::uint8_t thrown = 0;      // task_step
    std::string_view name;        // call, c_call: name; code: qualname; thread: name; process: the
                                  // command line (empty in older traces); syscall_entry: the
                                  // system call's name ("syscall_N" for an unknown number)
    std::int64_t next_tid = -1;   // sched_switch: the thread switched to (-1: unknown)
    std::string_view owner;       // c_call: owner; code: module
    std::string_view file;        // code: file
    std::string_view code_name;   // code: name (co_name; empty in traces without that field)
    // native_entry/exit: the function's address (payload `addr`, else the `ip` context, which
    // lttng-ust sets to the function's address for these events); has_address is false when
    // the event has neither (func_exit of the fast variant without the ip context).
    std::uint64_t address = 0;
    bool has_address = false;
    std::string_view func; // native_entry: debug_info.func ("name+offset"), empty if unknown
    std::string_view bin;  // native_entry: debug_info.bin ("file.so+offset"), empty if unknown
};

class EventReader {
public:
    EventReader() = default;

    // Decodes an event message. Returns false, leaving out unspecified, when it is neither a
    // python:* event, a cyg-profile one nor a kernel event of the model (kernel and cyg-profile
    // events without a thread's pid and tid are skipped too). Throws Error when a python:*
    // event class lacks a field the model needs (vpid/vtid contexts, id, ...), a time cannot
    // be converted, or the event is a python:batch (fast mode, which filter.pyust.expand must
    // expand first), std::bad_alloc.
    bool decode(const bt_message* message, PythonEvent& out);

    // Gives the model the names an event carries, whatever its process or thread (a code id
    // may run in a forked child): python:code's registration, and a python:call's name for a
    // code id that nothing named yet (StackModel::on_call_name). Every reader of the plugin
    // names code through this one function. Returns whether the model learnt a new name.
    // Throws std::bad_alloc.
    static bool apply_names(analysis::StackModel& model, const PythonEvent& event);

    // The thread of a decoded event, ready for apply(): model.thread_at(event.key, event.ts,
    // event.stream), and for an event of user space (any but a system call's or a
    // sched_switch) StackModel::on_user_space, which closes a system call whose exit was lost.
    // Every reader of the plugin finds an event's thread through this one function. Throws
    // what the model throws.
    static analysis::Thread& thread_of(analysis::StackModel& model, const PythonEvent& event);

    // Applies a decoded event to the model, but for its names: call apply_names() first, for
    // every event. Precondition: thread is thread_of(model, event). Throws what the model
    // throws.
    static void apply(analysis::StackModel& model, analysis::Thread& thread,
                      const PythonEvent& event);

    // A sched_switch in the context of a task the trace shows nothing else of (perf's
    // system-wide recording of the switches: another process, swapper, or a thread before
    // its first event) only says that next_tid runs again: applies that, creating no thread.
    // Returns whether event was such a switch. Throws nothing but std::bad_alloc.
    static bool apply_foreign_switch(analysis::StackModel& model, const PythonEvent& event);

    // Feeds a discarded-events message to the model (times are the message's, or 0 when its
    // stream class has none). Throws Error, std::bad_alloc.
    void read_discarded(const bt_message* message, analysis::StackModel& model);

    // The reader's index of a stream (assigned on first sight). Throws std::bad_alloc.
    std::uint64_t stream_index(const bt_stream* stream);

    // Forgets a stream that ended, so that a new stream at the same address gets a new index.
    // noexcept.
    void forget_stream(const bt_stream* stream) noexcept
    {
        m_streams.erase(stream);
        m_last_stream = nullptr;
    }

    // A readable name of an indexed stream. Precondition: index came from stream_index.
    const std::string& stream_name(std::uint64_t index) const noexcept
    {
        return m_stream_names[index];
    }

private:
    using Member = FieldMember;
    struct ClassInfo {
        PythonKind kind = PythonKind::other;
        bool has_clock = false;
        // Where vpid/vtid (or pid/tid, perf_pid/perf_tid) are: the common context, the
        // specific context, or (perf) the payload.
        enum class KeyScope : std::uint8_t {
            common,
            specific,
            payload
        } key_scope = KeyScope::common;
        Member vpid, vtid;
        Member id, number, name, owner, file, code_name, awaited, awaited_id, thrown;
        // Native frames: payload addr, context ip, and the debug_info structure of the
        // context with its bin and func members (-1: absent).
        Member addr, ip, debug_info;
        int debug_bin = -1;
        int debug_func = -1;
        // Kernel events: the system call named by the event class (empty: by the payload's
        // id), and sched_switch's threads (prev_tid and next_tid, or perf's prev_pid and
        // next_pid).
        std::string syscall;
        Member prev_tid, next_tid;
    };

    // Fills the kernel parts of a new kernel event class's info; kind other when the class
    // has no thread to join. Throws std::bad_alloc.
    // Reads an event class's ClassInfo into info. Throws Error when a python event lacks
    // the fields pyust's model has (or the vpid and vtid contexts), std::bad_alloc.
    static void read_class_info(const bt_event_class* event_class, ClassInfo& info);
    static void kernel_class_info(const bt_event_class* event_class, ClassInfo& info);

    // The thread key of a switch's next thread (see m_tid_of_kernel_tid), learning the pair
    // of the thread leaving. Throws std::bad_alloc.
    std::int64_t thread_switched_to(const ClassInfo& info, const bt_field* payload,
                                    std::int64_t tid, std::int64_t next_tid);

    const ClassInfo& class_info(const bt_event_class* event_class);

    ClassMemo<bt_event_class, ClassInfo> m_classes;
    const bt_stream* m_last_stream = nullptr;
    std::uint64_t m_last_stream_index = 0;
    std::unordered_map<const bt_stream*, std::uint64_t> m_streams;
    std::vector<std::string> m_stream_names;
    std::string m_syscall_buffer; // the name of a system call missing from the table
    // sched_switch's payload names threads as the kernel numbers them (the initial PID
    // namespace), its event's thread key as the tracer's namespace does (vtid, perf's
    // perf_tid): in a container they differ. Each switch shows one pair, the thread leaving
    // (payload prev_tid, key tid); a switch's next_tid is translated with the pairs seen.
    std::unordered_map<std::int64_t, std::int64_t> m_tid_of_kernel_tid;
};

// Returns a clock snapshot in ns from its clock's origin. Throws Error on overflow.
analysis::Timestamp ns_from_origin(const bt_clock_snapshot* snapshot);

} // namespace pyust::plugin
