// The back end from Python 3.12 on: sys.monitoring (PEP 669) with C callables,
// under a tool id of pyust's own, for every thread of the interpreter at once.
//
// Events map onto pyust's: PY_START/PY_RESUME/PY_THROW open a frame (call),
// PY_RETURN/PY_YIELD close it (return), PY_UNWIND closes it with unwind=1,
// LINE is a line, CALL of a non-Python callable is a c_call and its C_RETURN
// or C_RAISE the c_return. Code that the filter leaves out answers DISABLE at
// every location that allows it, so the interpreter stops calling pyust there.
//
// Callbacks are global, so a thread cannot get callbacks of its own as with
// setprofile: each thread instead keeps, in a thread-local word, the tracing
// generation it was announced in; its first event of a new generation
// announces its stack and names it.
//
// Where it can (backend_eval.hpp), a start without lines or C calls runs on
// the frame-evaluation function instead, which hands over to sys.monitoring
// when a thread's recursion runs deep. The events stay on beside it, for the
// frames the interpreter does not evaluate: those that extension modules
// report through the C API (Cython's profile=True functions, from Cython 3.1).
// A Python frame's first event answers DISABLE (the function records it), so
// the interpreter soon runs Python code without them. They also make 3.14's
// close() of a suspended generator run its frame as any tool watching unwinds
// sees it.
#include "hook/python_compat.hpp"

#if !PYUST_HAS_PER_THREAD_SETTERS

#include <cstdio>
#include <string>

#include "hook/backend.hpp"
#include "hook/backend_eval.hpp"
#include "hook/frames.hpp"
#include "hook/registration.hpp"
#include "hook/session.hpp"
#include "hook/stacks.hpp"
#include "hook/state.hpp"
#include "hook/tasks.hpp"

namespace pyust::hook {
namespace {

enum Event {
    py_start,
    py_resume,
    py_throw,
    py_return,
    py_yield,
    py_unwind,
    line,
    call,
    c_return,
    c_raise,
    event_count
};

const char* const k_event_names[event_count] = {
    "PY_START",  "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD",
    "PY_UNWIND", "LINE",      "CALL",     "C_RETURN",  "C_RAISE",
};

struct Monitoring {
    PyObject* module = nullptr;  // sys.monitoring
    PyObject* disable = nullptr; // sys.monitoring.DISABLE
    long bits[event_count] = {};
    PyObject* callbacks[event_count] = {};
    int tool = -1;
};

Monitoring m;

// The generation in which every thread's stack is in the trace already: the
// frame-evaluation function serves it, or handed over to sys.monitoring
// during it.
std::uint32_t s_announced_generation = 0;

// The generation this thread was announced in, and whether it is named (or
// pyust gave up: a thread threading does not know, after k_naming_attempts).
thread_local std::uint32_t t_generation __attribute__((tls_model("initial-exec"))) = 0;
thread_local bool t_is_named __attribute__((tls_model("initial-exec"))) = false;
thread_local std::uint32_t t_naming_attempts __attribute__((tls_model("initial-exec"))) = 0;
constexpr std::uint32_t k_naming_attempts = 256;

PyObject* none() noexcept
{
    Py_INCREF(Py_None);
    return Py_None;
}

PyObject* disable() noexcept
{
    Py_INCREF(m.disable);
    return m.disable;
}

// Whether the event is a Python frame's that the frame-evaluation function
// records (not an extension module's, reported for a code object of its own
// while the caller's frame runs).
inline bool is_evaluated([[maybe_unused]] PyObject* const* args,
                         [[maybe_unused]] Py_ssize_t nargs) noexcept
{
#if PYUST_HAS_EVAL_BACKEND
    return eval_frame::is_installed() && nargs >= 1 && eval_frame::is_running_frame_of(args[0]);
#else
    return false;
#endif
}

CodeInfo* code_info(PyObject* const* args, Py_ssize_t nargs) noexcept
{
    if (nargs < 1 || !PyCode_Check(args[0]))
        return nullptr;
    return info_for_code(reinterpret_cast<PyCodeObject*>(args[0]), nullptr);
}

// The thread's name from threading's table of running threads; false while
// the thread is not in it yet (its first frames run before threading adds it).
bool name_current_thread() noexcept
{
    compat::SavedError saved;
    bool is_named = false;
    PyObject* modules = PySys_GetObject("modules"); // borrowed
    PyObject* module = modules != nullptr ? PyDict_GetItemString(modules, "threading") : nullptr;
    PyObject* active = module != nullptr ? PyObject_GetAttrString(module, "_active") : nullptr;
    PyObject* ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    PyObject* thread = (active != nullptr && ident != nullptr && PyDict_Check(active))
                           ? PyDict_GetItemWithError(active, ident)
                           : nullptr;
    PyObject* name = thread != nullptr ? PyObject_GetAttrString(thread, "_name") : nullptr;
    if (name != nullptr && PyUnicode_Check(name)) {
        if (const char* text = PyUnicode_AsUTF8(name)) {
            try {
                name_thread(current_tid(), text);
                is_named = true;
            } catch (...) {
            }
        }
    }
    Py_XDECREF(name);
    Py_XDECREF(ident);
    Py_XDECREF(active);
    PyErr_Clear();
    return is_named;
}

// The slow path of a thread's first events in a generation: announce its
// stack (once), and name it (as soon as threading knows it).
void begin_thread(PyCodeObject* entering) noexcept
{
    if (t_generation != s_state.generation && s_state.generation == s_announced_generation) {
        t_generation = s_state.generation;
    } else if (t_generation != s_state.generation) {
        t_generation = s_state.generation;
        PyFrameObject* frame = PyEval_GetFrame(); // borrowed
        bool is_entering = false;
        if (frame != nullptr && entering != nullptr) {
            PyCodeObject* code = PyFrame_GetCode(frame);
            is_entering = code == entering;
            Py_DECREF(code);
        }
        PyFrameObject* open = open_part(frame, is_entering);
        open_stack(open);
        Py_XDECREF(open);
    }
    if (!t_is_named)
        t_is_named = name_current_thread() || ++t_naming_attempts >= k_naming_attempts;
}

[[gnu::always_inline]] inline void ensure_thread(PyCodeObject* entering) noexcept
{
    if (t_generation != s_state.generation || !t_is_named) [[unlikely]]
        begin_thread(entering);
}

bool is_python_callable(PyObject* callable) noexcept
{
    return PyFunction_Check(callable) ||
           (PyMethod_Check(callable) && PyFunction_Check(PyMethod_GET_FUNCTION(callable)));
}

// The roots of asyncio task steps open on this thread (tasks.hpp), innermost last: each
// frame (frames.hpp: the complete one), its code's info, its coroutine, and its step
// (tasks::enter_step()). An eager task's first step nests in its creator's; past k_max_roots
// nested steps, the deeper ones go unannounced.
struct OpenRoot {
    const void* frame;
    const CodeInfo* info;
    const void* coroutine;
    tasks::Step step;
};
constexpr int k_max_roots = 16;
thread_local OpenRoot t_roots[k_max_roots] __attribute__((tls_model("initial-exec")));
thread_local int t_root_count __attribute__((tls_model("initial-exec"))) = 0;
// The code of the innermost open root (t_roots' last), or nullptr: the end of a coroutine's frame
// of other code is no step's end, which one word tells.
thread_local const CodeInfo* t_root_code __attribute__((tls_model("initial-exec"))) = nullptr;

// The thread state of the thread's open steps, read at the first one's start (nullptr while none
// is open): a step runs in one thread state, alive until its root returns. The frames of every
// coroutine a step starts or resumes are read from it, rather than through PyThreadState_Get(), a
// call into libpython that reaches its thread-local through __tls_get_addr (some 40 instructions a
// coroutine).
thread_local PyThreadState* t_step_state __attribute__((tls_model("initial-exec"))) = nullptr;

// A frame's call, recorded (its code is traced).
[[gnu::always_inline]] inline PyObject* enter_traced(PyObject* const* args,
                                                     const CodeInfo& info) noexcept
{
    ensure_thread(reinterpret_cast<PyCodeObject*>(args[0]));
    check_session();
    s_state.emitter->call(info);
    return none();
}

// A frame's return, recorded (its code is traced).
[[gnu::always_inline]] inline void record_exit(const CodeInfo& info, bool is_unwind) noexcept
{
    ensure_thread(nullptr);
    s_state.emitter->ret(info, is_unwind);
}

[[gnu::always_inline]] inline PyObject* exit_traced(const CodeInfo& info, bool is_unwind) noexcept
{
    record_exit(info, is_unwind);
    return none();
}

// A frame of code that plays a part in asyncio's tasks (k_asyncio) that is no task's root:
// recorded as the filter says. A coroutine's code never answers DISABLE: any of its frames may
// be a root.
inline PyObject* enter_asyncio(PyObject* const* args, const CodeInfo& info,
                               bool can_disable) noexcept
{
    if ((info.trace & k_traced) != 0)
        return enter_traced(args, info);
    return can_disable && !info.is_coroutine ? disable() : none();
}

#if PYUST_HAS_EVAL_BACKEND
inline PyThreadState* current_state() noexcept
{
    PyThreadState* tstate = t_step_state;
    return tstate != nullptr ? tstate : PyThreadState_Get();
}

// Whether the innermost frame, which runs info's code, is the innermost open root (the only code
// of which t_root_code tells). The frame is read only when the code is the root's.
[[gnu::always_inline]] inline bool is_innermost_root(const CodeInfo& info) noexcept
{
    return t_root_code == &info &&
           t_roots[t_root_count - 1].frame == frames::innermost_complete(t_step_state);
}

// Whether a coroutine's frame that starts, resumes or has an exception thrown in (is_throw; frame,
// the thread's innermost) may begin a task's step: as a root (no coroutine resumed it), or after
// an eager probe said True (an eager task's first step), or, thrown in while the thread runs no
// step, as an inner root (the frame that an exception thrown into a task resumes, which the
// interpreter links to its awaiting frame, and each one that it unwinds to, all a PY_THROW).
// Every coroutine's frame asks, inline; on_coroutine_enter() tells.
[[gnu::always_inline]] inline bool may_begin_step(_PyInterpreterFrame* frame,
                                                  bool is_throw) noexcept
{
    return !frames::is_resumed_by_generator(frame) || tasks::has_eager_hint() ||
           (is_throw && tasks::is_between_steps());
}

// The start or resumption of a task's root frame (chain: its frame and coroutine, and for an
// inner root its task's root coroutine): a step begins, and the frame's call is recorded whatever
// the filter says.
[[gnu::always_inline]] inline PyObject* on_root_enter(PyObject* const* args, CodeInfo& info,
                                                      const backend::Chain& chain,
                                                      PyThreadState* tstate) noexcept
{
    ensure_thread(reinterpret_cast<PyCodeObject*>(args[0]));
    check_session();
    if (t_root_count == 0)
        t_step_state = tstate;
    const bool is_traced = (info.trace & k_traced) != 0;
    const tasks::Step step = tasks::enter_step(chain.coroutine, is_traced, chain.task_root);
    t_roots[t_root_count++] = {chain.frame, &info, chain.coroutine, step};
    t_root_code = &info;
    if (tasks::records_root(step, is_traced)) {
        if (!is_traced)
            register_root(info);
        s_state.emitter->call(info);
    }
    return none();
}

// A coroutine's frame that may_begin_step(): which root it is, if any (none past k_max_roots
// open ones).
[[gnu::noinline]] PyObject* on_coroutine_enter(PyObject* const* args, CodeInfo& info,
                                               PyThreadState* tstate) noexcept
{
    _PyInterpreterFrame* frame = frames::innermost_complete(tstate);
    if (frame == nullptr || t_root_count >= k_max_roots)
        return enter_asyncio(args, info, false);
    PyGenObject* coroutine = frames::generator_of(frame);
    if (frames::is_root(frame->previous))
        return on_root_enter(args, info, {frame, coroutine, nullptr}, tstate);
    if (tasks::is_between_steps()) { // an inner root?
        const backend::Chain chain = frames::chain_of(frame);
        if (chain.task_root != nullptr && chain.task_root != chain.coroutine &&
            tasks::is_task(chain.task_root))
            return on_root_enter(args, info, chain, tstate);
    }
    if (tasks::has_eager_hint() && tasks::is_eager_start(coroutine))
        return on_root_enter(args, info, {frame, coroutine, nullptr}, tstate);
    return enter_asyncio(args, info, false);
}
#endif

// How a frame starts running, as sys.monitoring tells it: PY_START or PY_RESUME, or PY_THROW (an
// exception thrown in), which cannot be disabled.
enum class Entry : std::uint8_t { start, thrown };

// Filtered-out code pays only the verdict lookup (and, once per code location, DISABLE); asyncio's
// takes its own path.
[[gnu::always_inline]] inline PyObject* on_enter(PyObject* const* args, Py_ssize_t nargs,
                                                 Entry entry) noexcept
{
    const bool can_disable = entry == Entry::start;
    CodeInfo* info = is_evaluated(args, nargs) ? nullptr : code_info(args, nargs);
    if (info != nullptr && info->trace == k_traced) [[likely]]
        return enter_traced(args, *info);
    if (info != nullptr && info->trace != 0) [[unlikely]] {
#if PYUST_HAS_EVAL_BACKEND
        if (info->is_coroutine) {
            PyThreadState* tstate = current_state();
            if (may_begin_step(frames::innermost_frame(tstate), entry == Entry::thrown))
                [[unlikely]]
                return on_coroutine_enter(args, *info, tstate);
        }
#endif
        return enter_asyncio(args, *info, can_disable);
    }
    return can_disable ? disable() : none();
}

PyObject* on_py_start(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    return on_enter(args, nargs, Entry::start);
}

PyObject* on_py_throw(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    return on_enter(args, nargs, Entry::thrown);
}

// How a frame stops running, as sys.monitoring tells it.
enum class Exit : std::uint8_t { ret, yield, unwind };

#if PYUST_HAS_EVAL_BACKEND
// The end of a task's root frame (value: PY_RETURN's or PY_YIELD's value, PY_UNWIND's
// exception): the task's step ends, the task suspended (a yield, on value) or ended.
[[gnu::noinline]] PyObject* on_root_exit(const CodeInfo& info, PyObject* value, Exit exit) noexcept
{
    const OpenRoot& root = t_roots[--t_root_count];
    t_root_code = t_root_count > 0 ? t_roots[t_root_count - 1].info : nullptr;
    if (t_root_count == 0)
        t_step_state = nullptr;
    if (tasks::records_root(root.step, (info.trace & k_traced) != 0))
        record_exit(info, exit == Exit::unwind);
    const tasks::End end = exit == Exit::unwind  ? tasks::End::raised
                           : exit == Exit::yield ? tasks::End::yielded
                                                 : tasks::End::returned;
    tasks::leave_step(root.step, root.coroutine, end, exit == Exit::ret ? nullptr : value);
    return none();
}
#endif

// The end of a frame of code that plays a part in asyncio's tasks (k_asyncio), traced or not (it
// never answers DISABLE): a task's root takes on_root_exit(); a factory's return hands over the
// new task (value); a traced coroutine frame's yield (an async generator's in an await) is one
// more frame the task's next step resumes.
[[gnu::noinline]] PyObject* on_asyncio_exit(const CodeInfo& info, PyObject* value,
                                            Exit exit) noexcept
{
#if PYUST_HAS_EVAL_BACKEND
    if (is_innermost_root(info))
        return on_root_exit(info, value, exit);
#endif
    if (info.is_task_factory && exit == Exit::ret && value != nullptr)
        tasks::on_factory_return(value, info.is_task_adopter);
    if (info.is_eager_probe)
        tasks::on_probe_return(exit == Exit::ret ? value : nullptr);
    if ((info.trace & k_traced) == 0)
        return none();
    if (exit == Exit::yield &&
        (info.is_coroutine || (info.is_async_generator && !tasks::is_async_yield(value))))
        tasks::on_yield();
    return exit_traced(info, exit == Exit::unwind);
}

// PY_RETURN and PY_YIELD. A coroutine's frame, which every step resumes and suspends, stays
// inline but for a root's.
[[gnu::always_inline]] inline PyObject* on_exit(PyObject* const* args, Py_ssize_t nargs,
                                                Exit exit) noexcept
{
    CodeInfo* info = is_evaluated(args, nargs) ? nullptr : code_info(args, nargs);
    if (info != nullptr && info->trace == k_traced) [[likely]]
        return exit_traced(*info, false);
    if (info != nullptr && info->trace != 0) [[unlikely]] {
        if (info->is_coroutine) {
#if PYUST_HAS_EVAL_BACKEND
            if (is_innermost_root(*info))
                return on_root_exit(*info, nargs >= 3 ? args[2] : nullptr, exit);
#endif
            if ((info->trace & k_traced) == 0)
                return none();
            if (exit == Exit::yield)
                tasks::on_yield();
            return exit_traced(*info, false);
        }
        return on_asyncio_exit(*info, nargs >= 3 ? args[2] : nullptr, exit);
    }
    return disable();
}

PyObject* on_py_return(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    return on_exit(args, nargs, Exit::ret);
}

PyObject* on_py_yield(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    return on_exit(args, nargs, Exit::yield);
}

PyObject* on_py_unwind(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    CodeInfo* info = is_evaluated(args, nargs) ? nullptr : code_info(args, nargs);
    if (info != nullptr && info->trace == k_traced) [[likely]]
        return exit_traced(*info, true);
    if (info != nullptr && info->trace != 0) [[unlikely]]
        return on_asyncio_exit(*info, nargs >= 3 ? args[2] : nullptr, Exit::unwind);
    return none();
}

PyObject* on_line(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    CodeInfo* info = code_info(args, nargs);
    if (!is_traced(info))
        return disable();
    if (nargs >= 2) {
        const long number = PyLong_AsLong(args[1]);
        if (number == -1 && PyErr_Occurred())
            PyErr_Clear();
        ensure_thread(nullptr);
        s_state.emitter->line(*info, static_cast<std::uint32_t>(number));
    }
    return none();
}

// sys.monitoring's CALL event comes before every call; Python functions have their own
// PY_START, so only calls of C callables (builtins, methods of C types) are reported here.
PyObject* on_c_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    CodeInfo* info = code_info(args, nargs);
    if (!is_traced(info))
        return disable();
    if (nargs >= 3 && !is_python_callable(args[2])) {
        const char* name = "?";
        const char* owner = "?";
        c_function_names(args[2], &name, &owner);
        ensure_thread(nullptr);
        s_state.emitter->c_call(name, owner);
    }
    return none();
}

PyObject* on_c_exit(PyObject* const* args, Py_ssize_t nargs, bool has_raised) noexcept
{
    if (nargs >= 3 && is_traced(code_info(args, nargs)) && !is_python_callable(args[2]))
        s_state.emitter->c_return(has_raised);
    return none();
}

PyObject* on_c_return(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    return on_c_exit(args, nargs, false);
}

PyObject* on_c_raise(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept
{
    return on_c_exit(args, nargs, true);
}

#define PYUST_CALLBACK(fn) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn))

PyMethodDef k_methods[event_count] = {
    {"pyust_py_start", PYUST_CALLBACK(on_py_start), METH_FASTCALL, nullptr},
    {"pyust_py_resume", PYUST_CALLBACK(on_py_start), METH_FASTCALL, nullptr},
    {"pyust_py_throw", PYUST_CALLBACK(on_py_throw), METH_FASTCALL, nullptr},
    {"pyust_py_return", PYUST_CALLBACK(on_py_return), METH_FASTCALL, nullptr},
    {"pyust_py_yield", PYUST_CALLBACK(on_py_yield), METH_FASTCALL, nullptr},
    {"pyust_py_unwind", PYUST_CALLBACK(on_py_unwind), METH_FASTCALL, nullptr},
    {"pyust_line", PYUST_CALLBACK(on_line), METH_FASTCALL, nullptr},
    {"pyust_call", PYUST_CALLBACK(on_c_call), METH_FASTCALL, nullptr},
    {"pyust_c_return", PYUST_CALLBACK(on_c_return), METH_FASTCALL, nullptr},
    {"pyust_c_raise", PYUST_CALLBACK(on_c_raise), METH_FASTCALL, nullptr},
};

// Calls sys.monitoring.<function>(args...); a new reference, or nullptr
// with the error set.
template <typename... Args> PyObject* call_monitoring(const char* function, Args... args)
{
    return PyObject_CallMethod(m.module, function, args...);
}

// Loads sys.monitoring's pieces once. Throws TracerError.
void load()
{
    if (m.module != nullptr)
        return;
    PyObject* module = PySys_GetObject("monitoring"); // borrowed
    PyObject* events = module != nullptr ? PyObject_GetAttrString(module, "events") : nullptr;
    PyObject* disable_obj = module != nullptr ? PyObject_GetAttrString(module, "DISABLE") : nullptr;
    bool is_ok = events != nullptr && disable_obj != nullptr;
    for (int e = 0; is_ok && e < event_count; ++e) {
        PyObject* bit = PyObject_GetAttrString(events, k_event_names[e]);
        m.bits[e] = bit != nullptr ? PyLong_AsLong(bit) : -1;
        Py_XDECREF(bit);
        m.callbacks[e] = PyCFunction_New(&k_methods[e], nullptr);
        is_ok = m.bits[e] > 0 && m.callbacks[e] != nullptr;
    }
    Py_XDECREF(events);
    if (!is_ok) {
        PyErr_Clear();
        Py_XDECREF(disable_obj);
        throw TracerError("Cannot start tracing: this interpreter's sys.monitoring is not usable");
    }
    Py_INCREF(module);
    m.module = module;
    m.disable = disable_obj;
}

// A free tool id, preferring those no convention reserves (3, 4), or -1.
int free_tool_id() noexcept
{
    for (int id : {4, 3, 5, 1, 0, 2}) {
        PyObject* tool = call_monitoring("get_tool", "(i)", id);
        if (tool == nullptr) {
            PyErr_Clear();
            continue;
        }
        const bool is_free = tool == Py_None;
        Py_DECREF(tool);
        if (is_free)
            return id;
    }
    return -1;
}

bool call_ok(PyObject* result) noexcept
{
    if (result == nullptr) {
        PyErr_Clear();
        return false;
    }
    Py_DECREF(result);
    return true;
}

long event_mask() noexcept
{
    long mask = m.bits[py_start] | m.bits[py_resume] | m.bits[py_throw] | m.bits[py_return] |
                m.bits[py_yield] | m.bits[py_unwind];
    if (s_state.options.lines)
        mask |= m.bits[line];
    if (s_state.options.c_calls)
        mask |= m.bits[call] | m.bits[c_return] | m.bits[c_raise];
    return mask;
}

void uninstall_monitoring() noexcept;

// Takes a tool id and turns the events on. Throws TracerError.
void install_monitoring(bool is_caller_announced)
{
    load();
    m.tool = free_tool_id();
    if (m.tool < 0 || !call_ok(call_monitoring("use_tool_id", "(is)", m.tool, "pyust")))
        throw TracerError("Cannot start tracing: no free sys.monitoring tool id");
    bool is_ok = true;
    for (int e = 0; e < event_count; ++e)
        is_ok = is_ok && call_ok(call_monitoring("register_callback", "(ilO)", m.tool, m.bits[e],
                                                 m.callbacks[e]));
    // Locations an earlier filter disabled are enabled again: the new
    // filter takes its own verdicts.
    is_ok = is_ok && call_ok(call_monitoring("restart_events", nullptr));
    // The caller's stack was announced by start(): its thread is current.
    if (is_caller_announced)
        t_generation = s_state.generation;
    is_ok = is_ok && call_ok(call_monitoring("set_events", "(il)", m.tool, event_mask()));
    if (!is_ok) {
        uninstall_monitoring();
        throw TracerError("Cannot start tracing: sys.monitoring refused pyust's callbacks");
    }
}

// Frees the tool id, if taken. noexcept.
void uninstall_monitoring() noexcept
{
    if (m.tool < 0)
        return;
    call_ok(call_monitoring("set_events", "(il)", m.tool, 0L));
    for (int e = 0; e < event_count; ++e)
        call_ok(call_monitoring("register_callback", "(ilO)", m.tool, m.bits[e], Py_None));
    // Where the interpreter has it (3.14), clear_tool_id also drops the tool's local events.
    if (PyObject_HasAttrString(m.module, "clear_tool_id"))
        call_ok(call_monitoring("clear_tool_id", "(i)", m.tool));
    call_ok(call_monitoring("free_tool_id", "(i)", m.tool));
    // The locations the filter answered DISABLE stay disabled for the id (3.12 to 3.15,
    // clear_tool_id or not) until events restart: the next tool to take it would miss their
    // events. Other tools get their own DISABLEd events again, once, as at any restart.
    call_ok(call_monitoring("restart_events", nullptr));
    m.tool = -1;
}

} // namespace

#if PYUST_HAS_EVAL_BACKEND
// Every frame running now was announced or entered under the function: the
// events go on with every thread counted as announced in this generation, so
// the open frames get their returns from sys.monitoring.
void eval_frame::take_over() noexcept
{
    // Taken again: the Python frames' locations answered DISABLE meanwhile.
    uninstall_monitoring();
    try {
        install_monitoring(true);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "pyust: warning: %s; tracing ends here\n", error.what());
    }
}
#endif

namespace backend {

const char* name() noexcept
{
    return eval_frame::name_or("monitoring");
}

void check_free()
{
    load();
    // Also with the frame-evaluation function: it may hand over.
    if (free_tool_id() < 0)
        throw TracerError("Cannot start tracing: every sys.monitoring tool id (0-5) is taken "
                          "by other tools (debuggers, profilers, coverage); stop one first");
#if PYUST_HAS_EVAL_BACKEND
    eval_frame::choose(s_state.options);
#endif
}

void install(bool is_caller_announced)
{
#if PYUST_HAS_EVAL_BACKEND
    if (eval_frame::install_if_chosen(is_caller_announced)) {
        s_announced_generation = s_state.generation;
        try {
            install_monitoring(true);
        } catch (...) {
            eval_frame::uninstall(false);
            throw;
        }
        return;
    }
#endif
    install_monitoring(is_caller_announced);
}

void uninstall(bool close_stacks) noexcept
{
#if PYUST_HAS_EVAL_BACKEND
    // Other threads' frames stay open in the trace, as with the events alone
    // (there is no callback of their own to close them with).
    if (eval_frame::is_installed())
        eval_frame::uninstall(close_stacks);
#else
    (void)close_stacks;
#endif
    uninstall_monitoring();
}

void attach_current_thread() noexcept
{
    // Threads announce themselves at their first event (begin_thread); this
    // one was named by the caller (core.cpp, from pyust's thread bootstrap).
    t_is_named = true;
}

} // namespace backend
} // namespace pyust::hook

#endif // !PYUST_HAS_PER_THREAD_SETTERS
