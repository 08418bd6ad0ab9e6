// The stack-rebuilding core of pyust's analyses: it replays python:* events per (pid, tid),
// keeps each thread's stack of open frames, and aggregates what every report needs (a calling
// context tree per thread, per-function and per-line statistics) without keeping anything that
// grows with the length of the trace. It knows nothing of babeltrace2: the plugin feeds it plain
// values, so the same logic is unit-tested on its own.
//
// Truth with imperfect traces: the model never lets a depth go negative, never drops an event
// silently, and records per thread every place where its stacks cannot be exact (a trace that
// starts mid-call, frames still open at the end, lost events), with the times.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/task.hpp"
#include "analysis/thread_key.hpp"

namespace pyust::analysis {

// A name read from a trace, made safe to print and valid UTF-8 whatever the trace holds: control
// characters (C0, DEL and C1, which could drive a terminal), the folded format's separator ';',
// U+2028/U+2029 and U+FFFE/U+FFFF (no XML character), and every byte that is not part of valid
// UTF-8 (a damaged or hostile trace) become \xNN escapes, one per byte. Everything the model
// names (code, threads, C and native frames) goes through it, so every report is valid UTF-8,
// its JSON valid JSON and its SVG valid XML. Throws std::bad_alloc.
std::string printable(std::string_view name);

// printable() for text read as prose, a process's title (its command line): ';' kept, and a
// line feed, tab or carriage return written \n, \t, \r, as a shell or Python writes them,
// so that the title stays one line. The folded format, whose frames ';' separates, passes a
// title through printable() as well. Throws std::bad_alloc.
std::string readable(std::string_view text);

// text with every byte that is not part of valid UTF-8 as a \xNN escape, and nothing else
// changed. Throws std::bad_alloc.
std::string valid_utf8(std::string_view text);

// What a frame runs: a Python code object (by its id), a C function called from Python (by its
// index in the model's table of C functions), a native function of an instrumented binary
// (is_c and is_native: by its index in the model's table of native functions), or the kernel
// (is_c and is_kernel: a system call by its index in the model's table of kernel frames, or
// off_cpu_frame, the time the thread spent off the CPU).
struct FrameId {
    std::uint64_t value = 0;
    bool is_c = false;
    bool is_native = false;
    bool is_kernel = false;

    bool operator==(const FrameId& other) const noexcept
    {
        return value == other.value && is_c == other.is_c && is_native == other.is_native &&
               is_kernel == other.is_kernel;
    }
};

// Set in the value of a Python frame's FrameId whose code id was registered again with other
// names (StackModel::on_code): a code of the model's own, never a trace's id (a code id holds a
// pid, under 2^22, above its 32-bit sequence number).
inline constexpr std::uint64_t reused_code_bit = 1ULL << 63;

// The kernel frame of the time off the CPU, labelled "[off-cpu]".
inline constexpr FrameId off_cpu_frame{0, true, false, true};

struct FrameIdHash {
    std::size_t operator()(const FrameId& id) const noexcept
    {
        return std::hash<std::uint64_t>()(id.value) ^ (id.is_c ? 0x9e3779b97f4a7c15ULL : 0) ^
               (id.is_native ? 0xc2b2ae3d27d4eb4fULL : 0) ^
               (id.is_kernel ? 0x165667b19e3779f9ULL : 0);
    }
};

// What a file name of python:code reads as when the code was compiled with an empty one
// (compile(source, "", "exec"): attrs' generated classes). The hook records this placeholder
// itself (src/hook/registry.hpp has the same text); traces of older hooks hold "". Angle
// brackets, like CPython's own "<string>" and "<frozen ...>": no file on disk is named so.
inline constexpr std::string_view no_file_name = "<no file name>";

// The names behind a Python code id: what its python:code event said, or, until one comes,
// the name its call events carry (is_registered false: a live reader or a trace chunk that
// starts after the registration).
struct CodeNames {
    std::string module;   // "?" when the code ran without a str __name__ (exec'd code)
    std::string qualname; // co_qualname (co_name before Python 3.11)
    std::string name;     // co_name; empty in traces of hooks that did not record it
    std::string file;     // no_file_name for an empty co_filename
    std::uint32_t first_line = 0;
    bool is_registered = false; // named by python:code (not only by its calls)
    std::string label;          // code_label(*this), computed once
};

// The one naming rule of Python code, used by every output (profile, tree, lines, folded,
// chrome, svg, top) and by filter.pyust.stacks: "module:qualname", where
// - module is the file when the code ran without a module (module "?", e.g. jinja2's
//   templates and other exec'd code, named "template.html:render"), and
// - qualname gets "[name]" when the code's name (co_name) is not the last part of its qualified
//   name: one `def` compiled into code objects renamed per function, like numpy's dispatch
//   wrappers ("...decorator.<locals>.public_api[concatenate]").
// Code named only by its calls reads "?:qualname". The parts must already be printable().
// Throws std::bad_alloc.
std::string code_label(const CodeNames& info);

// One open frame of a thread's stack.
struct Frame {
    FrameId id;
    Timestamp begin = 0;
    Timestamp child_ns = 0; // time of the closed children, clipped to the window
    std::uint32_t node = 0; // its node in the thread's calling context tree
    std::uint32_t line = 0; // the line running now (0: none seen yet)
    Timestamp line_begin = 0;
    // Native frames: the address of the function that opened it, and the calls merged into it
    // (functions of the same readable name called from it directly: Cython's wrapper calling
    // its implementation), with the address of the last one merged.
    std::uint64_t native_address = 0;
    std::uint64_t merged_address = 0;
    std::uint32_t merged = 0;
    // asyncio: the task it runs for (its index in StackModel::tasks(), or no_task) and its node
    // in the tasks' tree (StackModel::task_nodes()). A coroutine's frame runs in segments, one
    // per step of its task; is_overlapping says whether one overlapped the window (its call
    // counts once, when it returns for good).
    std::uint32_t task = no_task;
    std::uint32_t task_node = 0;
    bool is_overlapping = false;
};

// A node of a thread's calling context tree: one call path, aggregated over every call.
struct ContextNode {
    FrameId id;
    std::uint32_t parent = 0;
    std::uint64_t calls = 0;
    Timestamp total_ns = 0; // inclusive time
    Timestamp self_ns = 0;  // inclusive time minus the children's
    std::vector<std::uint32_t> children;
    // A thread's node where an asyncio task's steps start (Handle._run -> worker): what it
    // and its children run is the task's (StackModel::task_nodes() has it under the task).
    bool is_task_root = false;

    // Whether nothing ran there (in the window). A node where a coroutine only resumed holds
    // time and no call: its call counts where it returned for good. noexcept.
    bool is_empty() const noexcept { return calls == 0 && total_ns == 0; }
};

// Why a part of a thread's history is not exact.
enum class GapKind {
    unmatched_return,  // returns with no open frame: the trace started mid-call
    mismatched_return, // a return named a deeper frame: the frames above it were closed then
    open_at_end,       // frames still open at the end, closed at the thread's last event
    discarded_events,  // the tracer lost events in this window (stream-wide)
    lost_start,        // the process ran before the session recorded it (python:lost_start)
};

// Returns a short lower-case name for a gap kind ("unmatched return", ...). noexcept.
const char* gap_kind_name(GapKind kind) noexcept;

// A time range of a thread (or stream) where the rebuilt stacks may be wrong.
struct Gap {
    GapKind kind = GapKind::unmatched_return;
    Timestamp begin = 0;
    Timestamp end = 0;
    std::uint64_t count = 0; // events or frames concerned (0 when unknown)
};

// Per-function statistics, cProfile's columns.
struct FunctionStats {
    std::uint64_t calls = 0;
    Timestamp total_ns = 0; // inclusive time, counting only the outermost of recursive calls
    Timestamp self_ns = 0;
};

// Per-line statistics: hits, and the time from each hit to the next line of the same frame
// (or the frame's end), so it includes the time of the calls made on that line.
struct LineStats {
    std::uint64_t hits = 0;
    Timestamp total_ns = 0;
};

struct LineKey {
    std::uint64_t code_id = 0;
    std::uint32_t line = 0;

    bool operator==(const LineKey& other) const noexcept
    {
        return code_id == other.code_id && line == other.line;
    }
};

struct LineKeyHash {
    std::size_t operator()(const LineKey& key) const noexcept
    {
        return std::hash<std::uint64_t>()(key.code_id * 31 + key.line);
    }
};

class StackModel;

// Everything the model knows of one thread.
class Thread {
public:
    // Creates an empty thread. Throws std::bad_alloc.
    explicit Thread(ThreadKey key);

    const ThreadKey& key() const noexcept { return m_key; }
    const std::string& name() const noexcept { return m_name; }
    // The open frames, outermost first.
    const std::vector<Frame>& frames() const noexcept { return m_frames; }
    std::size_t depth() const noexcept { return m_frames.size(); }
    // The depth (1 = outermost) of the innermost open Python frame of code_id, or 0 when none
    // is open: where a python:return of code_id returns from. noexcept.
    std::size_t open_depth(std::uint64_t code_id) const noexcept;
    // The same for the native frame of a function (its FrameId), or 0 when none is open. noexcept.
    std::size_t open_native_depth(FrameId id) const noexcept;
    // The calling context tree; node 0 is the root (no frame).
    const std::vector<ContextNode>& nodes() const noexcept { return m_nodes; }
    const std::vector<Gap>& gaps() const noexcept { return m_gaps; }
    Timestamp first_ts() const noexcept { return m_first_ts; }
    Timestamp last_ts() const noexcept { return m_last_ts; }
    std::uint64_t event_count() const noexcept { return m_event_count; }

private:
    friend class StackModel;

    struct ChildKey {
        std::uint32_t parent;
        FrameId id;
        bool is_task_root;
        bool operator==(const ChildKey& other) const noexcept
        {
            return parent == other.parent && id == other.id && is_task_root == other.is_task_root;
        }
    };
    struct ChildKeyHash {
        std::size_t operator()(const ChildKey& key) const noexcept
        {
            return FrameIdHash()(key.id) * 31 + key.parent * 2 + key.is_task_root;
        }
    };

    // A step of an asyncio task running on the thread (an eager task's first step runs inside
    // its creator's).
    struct Step {
        std::uint32_t task = 0;
        std::size_t base = 0;        // the frames below its root frame
        bool is_root_pending = true; // the next call is its root's
        std::uint32_t to_resume = 0; // of the next calls, those that resume suspended frames
        std::uint32_t hidden_root_calls = 0; // calls of its root's code the report hides
        Timestamp begin = 0;
        Timestamp nested_ns = 0; // the steps of other tasks inside it
    };

    std::uint32_t child_node(std::uint32_t parent, FrameId id, bool is_task_root = false);

    ThreadKey m_key;
    std::string m_name;
    std::vector<Frame> m_frames;
    std::vector<ContextNode> m_nodes;
    std::unordered_map<ChildKey, std::uint32_t, ChildKeyHash> m_child_index;
    std::unordered_map<FrameId, std::uint32_t, FrameIdHash> m_active; // open frames per id
    Frame m_orphan; // the line slot of code running below the first frame seen (mid-call)
    std::vector<Gap> m_gaps;
    Timestamp m_first_ts = 0;
    Timestamp m_last_ts = 0;
    std::uint64_t m_event_count = 0;
    std::uint64_t m_last_stream = UINT64_MAX;
    // The steps running now, innermost last, and the frames of the innermost one's task that
    // returned since its last call: a step ends with a cascade of returns, from the frame that
    // yielded to the root, and only the task's next step says which of them were suspended.
    std::vector<Step> m_steps;
    std::vector<Frame> m_returned;
};

// Receives every frame the model closes, for outputs that stream (Chrome trace events).
class FrameListener {
public:
    virtual ~FrameListener() = default;
    // Called once per closed frame that overlaps the window, before it leaves the stack
    // (thread.frames().back() is the frame). end is its end clipped to the window, begin its
    // begin clipped. May throw; the exception leaves the model's call.
    virtual void on_frame_closed(const Thread& thread, const Frame& frame, Timestamp begin,
                                 Timestamp end) = 0;
    // Called once per await of an asyncio task (its index in StackModel::tasks()) that overlaps
    // the window, when it ends (at the task's next step, on thread, or at the end of the trace),
    // clipped to the window. Does nothing unless overridden. May throw, like on_frame_closed.
    virtual void on_await(const Thread& thread, std::uint32_t task, AwaitKind kind, Timestamp begin,
                          Timestamp end)
    {
        (void)thread, (void)task, (void)kind, (void)begin, (void)end;
    }
};

// Rebuilds stacks from python:* events. Events of one thread must come in time order; threads
// may interleave freely. Not thread-safe.
class StackModel {
public:
    StackModel() = default;

    // Restricts the statistics to [begin, end] (ns): frame and line times are clipped to it and
    // what does not overlap it is not counted. Stacks are still rebuilt from every event.
    // Precondition: begin <= end, and no event fed yet. noexcept.
    void set_window(Timestamp begin, Timestamp end) noexcept;

    // Sets (or clears, with nullptr) the listener told of every closed frame. The listener must
    // outlive the model's use of it. noexcept.
    void set_listener(FrameListener* listener) noexcept { m_listener = listener; }

    // python:code: registers the names of a code id. name is co_name (empty when the trace
    // does not have it); an empty file becomes no_file_name. A later registration of the same
    // id with other names (a program exec'd by a traced one goes on under its pid and counts
    // its ids from 1 again; a pid is used again after wrapping around at pid_max) names the
    // id's later events only: from then on the id stands for a code of the model's own (its
    // frames' FrameId has reused_code_bit set), and the frames before keep their names.
    // Throws std::bad_alloc.
    void on_code(std::uint64_t id, std::string module, std::string qualname, std::string file,
                 std::uint32_t first_line, std::string name = {});

    // python:call's name: names a code id that no python:code named yet ("?:name"), until one
    // does. Returns whether it named it (false when the id is known, or name is empty or "?":
    // no name). Throws std::bad_alloc.
    bool on_call_name(std::uint64_t id, std::string_view name);

    // python:thread: names a thread (key.tid is the named thread, not the emitting one).
    // Throws std::bad_alloc.
    void on_thread_name(const ThreadKey& key, std::string name);

    // Returns the thread (created on first use) that an event at ts on a stream (an opaque
    // number the caller chooses per trace stream) belongs to, after recording that the thread
    // was seen there at ts; that time is the one the on_* call for this event uses. A ts before
    // the thread's previous event (not expected) counts as that previous time, so that no
    // duration is ever negative. A thread off the CPU ([off-cpu] innermost) is back on it at
    // any event of its own: that frame closes at ts. Throws std::bad_alloc, or what the
    // listener throws.
    Thread& thread_at(const ThreadKey& key, Timestamp ts, std::uint64_t stream);

    // Whether an event of this thread came (thread_at). noexcept.
    bool has_thread(const ThreadKey& key) const noexcept { return m_threads.count(key) != 0; }

    // python:call. Precondition (here and below): thread comes from thread_at for this event.
    // Throws std::bad_alloc or whatever the listener throws (for the calls below too).
    void on_call(Thread& thread, std::uint64_t code_id);

    // python:return: closes the innermost frame of code_id. When the innermost frame is another
    // one but code_id is open deeper, the frames above it close now too (mismatched_return);
    // when it is not open at all, nothing closes (unmatched_return).
    void on_return(Thread& thread, std::uint64_t code_id);

    // python:c_call, with the C function's name and owner (module or type).
    void on_c_call(Thread& thread, std::string_view name, std::string_view owner);

    // python:c_return: closes the innermost frame if it is a C frame; otherwise nothing
    // closes (unmatched_return).
    void on_c_return(Thread& thread);

    // Native frames are named by readable_native_name() (native_names.hpp) unless raw is set:
    // then by their symbols. Call before the first event. noexcept.
    void set_raw_native_names(bool raw) noexcept { m_raw_native_names = raw; }

    // lttng_ust_cyg_profile(_fast):func_entry: a native function starts, at address in the
    // thread's process. func and bin are what flt.lttng-utils.debug-info says of it (its
    // debug_info `func`, "name+offset", and `bin`, "file.so+offset"; empty when unknown): the
    // frame is named after func without its offset, else bin, else the address (0x...). A
    // later event that resolves a function first seen unresolved renames it. Cython's
    // functions of one Python name in one binary (its wrapper, implementation and C function
    // of "nat.cy_entry") are one function (FrameId), and when one calls another of them
    // directly, the call is merged into the caller's frame instead of opening one; every other
    // native function is one per address.
    void on_native_entry(Thread& thread, std::uint64_t address, std::string_view func,
                         std::string_view bin);

    // func_exit of the function at address (has_address false when the event does not say which
    // function returns: the fast variant without the ip context): closes its innermost open
    // frame (or ends a call merged into it), and the frames above it (mismatched_return: their
    // exits were lost); when it is not open, nothing closes (unmatched_return: its entry was lost,
    // or came before the trace). Without an address, closes the innermost frame if it is native.
    void on_native_exit(Thread& thread, std::uint64_t address, bool has_address);

    // A system call starts (LTTng's syscall_entry_NAME, perf's raw_syscalls:sys_enter with its
    // number's name, or syscalls:sys_enter_NAME): a kernel frame named name on top of the
    // thread's stack. A syscall frame still open (its exit was lost) closes first. exit and
    // exit_group, which never return, push nothing.
    void on_syscall_entry(Thread& thread, std::string_view name);

    // A system call returns: closes the innermost frame if it is a system call. Otherwise (the
    // trace started inside the call) nothing closes, and no gap is noted: a system call is a
    // leaf, its missing entry hides no other frame.
    void on_syscall_exit(Thread& thread);

    // An event that the thread emitted in user space (python:*, cyg-profile; after thread_at
    // for it): no thread runs user code inside a system call, so a system call still open
    // innermost lost its exit (perf's or the tracer's buffer was full) and closes at the
    // event's time, as the next system call's entry would close it. Without this, the frames
    // the thread opened next would stand on that system call until they all returned: a
    // <module> on an rt_sigprocmask whose exit perf lost as the program started. No gap is
    // noted (see on_syscall_exit). Throws what the listener throws.
    void on_user_space(Thread& thread);

    // sched_switch away from the thread: an [off-cpu] frame on top of its stack, closed at its
    // next event (thread_at) or when on_switch_in says it runs again.
    void on_switch_out(Thread& thread);

    // sched_switch to the thread tid at ts: closes its [off-cpu] frame, if the model knows a
    // thread of that tid (in any process) and it is off the CPU. (A switch to a thread is
    // recorded in the context of the task it replaces; when the trace lacks those, the
    // thread's next event ends the frame.)
    void on_switch_in(std::int64_t tid, Timestamp ts);

    // asyncio (python:task, python:task_step, python:task_end: tracepoints/python_tp.h). A task
    // is known by its key within its process; a key stands for a new task once its task ended.
    // Its frames are the thread's frames from its step's root up (the steps of other tasks run
    // inside excepted); each also has a node in task_nodes(), under the task's root node, where
    // a coroutine's resumptions continue its call: a frame that suspends is not closed (no call
    // counted, its time so far counted) until the task's next step resumes it or not.

    // python:task: names the task of key, or creates it when the key names none (or a task that
    // ended and had a name): created now, by the task whose step runs on the thread (else by
    // the task of parent_key, 0 for none), where the innermost frame is, create_task's own
    // frames left out (the hook emits python:task as create_task returns, before or after its
    // python:return depending on the back end). Throws std::bad_alloc.
    void on_task(Thread& thread, std::uint64_t key, std::uint64_t parent_key,
                 std::string_view name);

    // python:task_step: a step of the task of key starts (a key without a task gets an unnamed
    // one): the thread's next call is the task's root frame, and of the calls from it on, the
    // first `resumed` resume, outermost first, the frames of the task that its previous step
    // suspended; the frames that returned then and are not resumed now had returned for good.
    // The time since that step is an await of `awaited` (1 bare yield, 2 future, 3 the task of
    // key awaited_id, 4 gather's future; 0 for a first step). thrown 1: an exception thrown into
    // the task resumes the `resumed`-th frame of its chain (the innermost suspended one) as the
    // step's root, the frames outside it stay suspended; thrown 2: the same, as the exception
    // (or the returned value) goes on out of the frame that ended the previous step: the same
    // asyncio step, no await between. Throws std::bad_alloc, or what the listener throws.
    void on_task_step(Thread& thread, std::uint64_t key, std::uint32_t resumed,
                      std::uint8_t awaited, std::uint64_t awaited_id, std::uint8_t thrown = 0);

    // python:task_end: the task of key ended (state 0 returned, 1 raised, 2 cancelled); its
    // suspended frames returned for good. Throws std::bad_alloc.
    void on_task_end(Thread& thread, std::uint64_t key, std::uint8_t state);

    // A python:call of code_id that the report leaves out (module filter): it may resume a
    // suspended frame that the report does not show. Precondition: thread is the event's (from
    // find_thread() or thread_at()). Throws std::bad_alloc.
    void on_hidden_call(Thread& thread, std::uint64_t code_id);

    // Whether the thread's next call is the root frame of a task's step: a report shows it
    // whatever its module filter says, as the hook records it whatever --modules says. noexcept.
    static bool is_task_root_call(const Thread& thread) noexcept
    {
        return !thread.m_steps.empty() && thread.m_steps.back().is_root_pending;
    }

    // Whether a python:return of code_id that the report's module filter leaves out is the
    // return of a running step's root frame, to be shown all the same (false for the return of
    // a hidden call of the same code inside the step, which it accounts for). noexcept.
    bool is_task_root_return(Thread& thread, std::uint64_t code_id) const noexcept;

    // The tasks, in the order they were created. noexcept.
    const std::vector<Task>& tasks() const noexcept { return m_tasks; }

    // The tasks' calling context trees, one under each task's root node (node 0 is unused).
    // noexcept.
    const std::vector<ContextNode>& task_nodes() const noexcept { return m_task_nodes; }

    // The thread of key when an event of it came (thread_at), else nullptr. noexcept.
    Thread* find_thread(const ThreadKey& key) noexcept
    {
        const auto it = m_threads.find(key);
        return it == m_threads.end() ? nullptr : it->second.get();
    }

    // python:line: code_id's frame now runs line.
    void on_line(Thread& thread, std::uint64_t code_id, std::uint32_t line);

    // A discarded-events message of a stream: every thread seen on that stream so far gets a
    // discarded_events gap [begin, end]; the stream keeps one too. count 0 means unknown.
    // Throws std::bad_alloc.
    void on_discarded(std::uint64_t stream, Timestamp begin, Timestamp end, std::uint64_t count);

    // A python:lost_start of process pid at ts: the process ran lost_ns before its first
    // recorded event, unrecorded (the session reached it late). Throws std::bad_alloc.
    void on_lost_start(std::int64_t pid, Timestamp ts, std::uint64_t lost_ns);

    // Closes every frame still open at its thread's last timestamp (open_at_end; kernel
    // frames, innermost, close without a gap: a process ends inside exit_group, off the CPU).
    // Call once, after the last event. Throws what on_return throws.
    void finish();

    // The display name of a frame: code_label() for Python code, "owner:name" for C
    // functions, the function's name for native ones, the system call's name or "[off-cpu]"
    // for kernel frames, "<unknown 0x...>" for a code id that neither a python:code nor a
    // call event named. Throws std::bad_alloc.
    std::string label(FrameId id) const;

    // Where a frame's code is: "file:first_line" for registered Python code, "(named by its
    // call)" for code only its call events named, "(unregistered)" for a code id nothing
    // named, "(C)" for C and native functions, "(kernel)" for kernel frames. Throws
    // std::bad_alloc.
    std::string location(FrameId id) const;

    // The names of a code id (registered or named by its call), or nullptr. noexcept.
    const CodeNames* code(std::uint64_t id) const noexcept;

    // The threads, sorted by (pid, tid). Throws std::bad_alloc.
    std::vector<const Thread*> threads() const;

    // Per-function statistics over every thread. noexcept.
    const std::unordered_map<FrameId, FunctionStats, FrameIdHash>& functions() const noexcept
    {
        return m_functions;
    }
    // Per-line statistics over every thread. noexcept.
    const std::unordered_map<LineKey, LineStats, LineKeyHash>& lines() const noexcept
    {
        return m_lines;
    }

    // The starts the trace lacks, per process, in the order they came: (pid, [begin, end]).
    // noexcept.
    const std::vector<std::pair<std::int64_t, Gap>>& lost_starts() const noexcept
    {
        return m_lost_starts;
    }

    // Discarded-events gaps per stream. noexcept.
    const std::unordered_map<std::uint64_t, std::vector<Gap>>& stream_gaps() const noexcept
    {
        return m_stream_gaps;
    }

private:
    struct NativeKey {
        std::int64_t pid;
        std::uint64_t address;
        bool operator==(const NativeKey& other) const noexcept
        {
            return pid == other.pid && address == other.address;
        }
    };
    struct NativeKeyHash {
        std::size_t operator()(const NativeKey& key) const noexcept
        {
            return std::hash<std::uint64_t>()(key.address) ^ std::hash<std::int64_t>()(key.pid);
        }
    };

    // The native function at address in pid (created on first sight). Throws std::bad_alloc.
    FrameId native_id(std::int64_t pid, std::uint64_t address, std::string_view func,
                      std::string_view bin);
    void pop_to(Thread& thread, std::size_t depth, Timestamp ts, bool may_suspend = false);
    static bool is_off_cpu(const Thread& thread) noexcept
    {
        return !thread.m_frames.empty() && thread.m_frames.back().id == off_cpu_frame;
    }
    void push(Thread& thread, FrameId id);
    // Closes the innermost frame at ts. A Python frame of a task with may_suspend (the frame
    // that a return names) may only suspend: its time counts, its call not yet (m_returned).
    void pop(Thread& thread, Timestamp ts, bool may_suspend = false);
    // Counts the call of a frame of thread that returned for good.
    void end_call(Thread& thread, const Frame& frame);

    // The tasks' side (task_model.cpp).
    struct TaskKey {
        std::int64_t pid;
        std::uint64_t key;
        bool operator==(const TaskKey& other) const noexcept
        {
            return pid == other.pid && key == other.key;
        }
    };
    struct TaskKeyHash {
        std::size_t operator()(const TaskKey& key) const noexcept
        {
            return std::hash<std::uint64_t>()(key.key) ^ std::hash<std::int64_t>()(key.pid);
        }
    };
    // What the model keeps of a task between its steps.
    struct TaskState {
        std::vector<Frame> suspended; // outermost first, from `next` on
        // During a step that an exception thrown in started (python:task_step's thrown): the
        // frames of the chain outside its root, which stay suspended, outermost first.
        std::vector<Frame> outer;
        std::size_t next = 0;
        Thread* thread = nullptr; // where they returned
        Timestamp suspended_at = 0;
        bool is_suspended = false;
    };
    std::uint32_t task_of(std::int64_t pid, std::uint64_t key) const noexcept;
    // Whether a frame runs asyncio's create_task (the loop's or asyncio.create_task).
    bool is_task_factory(FrameId id) const noexcept;
    std::uint32_t new_task(Thread& thread, std::uint64_t key, std::uint64_t parent_key);
    std::uint32_t task_child(std::uint32_t parent, FrameId id);
    // A frame pushed during a step joins its task (not the root: resume_call).
    void join_task(Thread& thread, Frame& frame);
    // The call of the root of a step, or of a frame it resumes: pushed, true; else false.
    bool resume_call(Thread& thread, FrameId id);
    void end_returned(Thread& thread);
    void end_suspended(std::uint32_t task);
    // A thrown step of `resumed`: its chain's frames outside its root go to state.outer, those
    // past its root return for good (see on_task_step).
    void keep_outer(TaskState& state, std::uint32_t resumed);
    // Puts state.outer back at the head of state.suspended's frames not resumed.
    static void restore_outer(TaskState& state);
    // Ends the steps whose root returned (at the end of the trace: every step, none suspends).
    void end_steps(Thread& thread, Timestamp ts, bool is_trace_end = false);
    void end_step(Thread& thread, Timestamp ts, bool suspends);
    void add_await(const Thread& thread, std::uint32_t task, AwaitKind kind, Timestamp begin,
                   Timestamp end);
    void finish_tasks();
    Timestamp clipped(Timestamp begin, Timestamp end) const noexcept
    {
        return begin <= m_end && end >= m_begin
                   ? std::max<Timestamp>(0, clip_end(end) - clip_begin(begin))
                   : 0;
    }
    void close_line(Frame& frame, Timestamp ts);
    void note(Thread& thread, GapKind kind, Timestamp begin, Timestamp end, std::uint64_t count);
    Timestamp clip_begin(Timestamp ts) const noexcept { return ts < m_begin ? m_begin : ts; }
    Timestamp clip_end(Timestamp ts) const noexcept { return ts > m_end ? m_end : ts; }

    // The id an event's code id stands for now: itself, or the model's own id once the code
    // id was registered again with other names (on_code). noexcept.
    std::uint64_t current_id(std::uint64_t code_id) const noexcept
    {
        if (m_reused_ids.empty())
            return code_id;
        const auto it = m_reused_ids.find(code_id);
        return it == m_reused_ids.end() ? code_id : it->second;
    }

    std::unordered_map<std::uint64_t, CodeNames> m_codes;
    std::unordered_map<std::uint64_t, std::uint64_t> m_reused_ids; // see on_code
    std::uint64_t m_next_reused = 0;
    std::unordered_map<std::string, std::uint64_t> m_c_index;
    std::vector<std::string> m_c_labels;
    std::string m_c_key; // reused buffer: no allocation per C call once warm
    std::unordered_map<NativeKey, std::uint64_t, NativeKeyHash> m_native_index;
    std::vector<std::string> m_native_labels;
    std::vector<bool> m_native_resolved; // named by debug-info's func (not a fallback)
    // pid, binary and name of the resolved native functions -> their index
    std::unordered_map<std::string, std::uint64_t> m_native_by_name;
    bool m_raw_native_names = false;
    std::vector<std::string> m_kernel_labels{"[off-cpu]"}; // index 0: off_cpu_frame
    std::unordered_map<std::string, std::uint64_t> m_kernel_index;
    std::unordered_map<ThreadKey, std::unique_ptr<Thread>, ThreadKeyHash> m_threads;
    std::unordered_map<std::int64_t, Thread*> m_tids; // for on_switch_in: the latest of a tid
    std::unordered_map<std::uint64_t, std::vector<Thread*>> m_stream_threads;
    std::unordered_map<std::uint64_t, std::vector<Gap>> m_stream_gaps;
    std::vector<std::pair<std::int64_t, Gap>> m_lost_starts;
    std::unordered_map<FrameId, FunctionStats, FrameIdHash> m_functions;
    std::unordered_map<LineKey, LineStats, LineKeyHash> m_lines;
    std::vector<Task> m_tasks;
    std::vector<TaskState> m_task_states;
    std::unordered_map<TaskKey, std::uint32_t, TaskKeyHash> m_task_index; // the latest of a key
    std::vector<ContextNode> m_task_nodes{1};
    std::unordered_map<Thread::ChildKey, std::uint32_t, Thread::ChildKeyHash> m_task_children;
    FrameListener* m_listener = nullptr;
    Thread* m_last_thread = nullptr;
    Timestamp m_begin = INT64_MIN;
    Timestamp m_end = INT64_MAX;
};

} // namespace pyust::analysis
