// The frame-evaluation back end (see backend_eval.hpp). With a frame-evaluation
// function set, CPython (3.11 on) evaluates every Python frame through it: calls,
// generator resumptions and throws, and a generator's creation, which runs the
// new frame only as far as RETURN_GENERATOR (no profiler sees it: skipped
// here). The function emits the call, evaluates the frame with the default
// evaluator, and emits the return (unwind=1 when the frame raised).
//
// Frames that were running when the function went in never pass through it:
// the caller's traced ones were announced by start(), and are closed when a
// call made from below them shows they have returned (at the latest at stop()).
// That is why this back end serves only starts where no other thread runs
// Python code (why_not()).
#include "hook/backend_eval.hpp"

#if PYUST_HAS_EVAL_BACKEND

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <pthread.h>

#include "hook/backend.hpp"
#include "hook/frames.hpp"
#include "hook/registration.hpp"
#include "hook/session.hpp"
#include "hook/stacks.hpp"
#include "hook/state.hpp"
#include "hook/tasks.hpp"

namespace pyust::hook::eval_frame {

bool detail::s_is_installed = false;

namespace {

using frames::chain_root;
using frames::code_of;
using frames::generator_of;
using frames::innermost_frame;
using frames::is_complete;
using frames::is_root;
using frames::is_suspended;
using frames::k_generator_kinds;

// Bumped by every install() and uninstall() (GIL): a frame's return is emitted
// only when the epoch of its call still holds, so frames still on a C stack
// after stop() or a new start() stay silent.
std::uint64_t s_epoch = 1;
bool s_is_chosen = false;

// The traced frames the thread that installed the function was running,
// outermost first, as far as they are known not to have returned.
struct Announced {
    _PyInterpreterFrame* frame;
    const CodeInfo* info;
};
std::vector<Announced>& s_announced = *new std::vector<Announced>; // never destroyed
PyThreadState* s_announcer = nullptr;
std::uint64_t s_announcer_id = 0; // its thread state's id (a fork may reuse the address)
// Wrapped frames running on the announcer's thread: while there are some, the
// announced frames are below them and cannot return.
std::uint32_t s_announcer_depth = 0;

// The address below which a thread's C stack counts as deep: a quarter of it
// used (0: not known yet; 1: never, its bounds unknown).
thread_local std::uintptr_t t_deep_below __attribute__((tls_model("initial-exec"))) = 0;

[[gnu::cold, gnu::noinline]] std::uintptr_t deep_stack_bound() noexcept
{
    pthread_attr_t attributes;
    void* lowest = nullptr;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0)
        return 1;
    const bool is_known = pthread_attr_getstack(&attributes, &lowest, &size) == 0;
    pthread_attr_destroy(&attributes);
    if (!is_known || size == 0)
        return 1;
    return reinterpret_cast<std::uintptr_t>(lowest) + size / 4 * 3; // stacks grow down
}

inline bool is_stack_deep() noexcept
{
    const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    if (t_deep_below == 0)
        t_deep_below = deep_stack_bound();
    return here < t_deep_below;
}

bool is_in_chain(const _PyInterpreterFrame* frame, _PyInterpreterFrame* top) noexcept
{
    for (const _PyInterpreterFrame* f = top; f != nullptr; f = f->previous) {
        if (f == frame)
            return true;
    }
    return false;
}

// Returns for the announced frames that are no longer on the stack under top.
void close_returned(_PyInterpreterFrame* top) noexcept
{
    while (!s_announced.empty() && !is_in_chain(s_announced.back().frame, top)) {
        s_state.emitter->ret(*s_announced.back().info, false);
        s_announced.pop_back();
    }
    if (s_announced.empty())
        s_announcer = nullptr;
}

// Whether the default evaluator will refuse the frame with a RecursionError
// before it runs (its entry check: _Py_EnterRecursiveCallTstate on 3.11,
// _Py_EnterRecursivePy from 3.12): a profiler never sees such a frame.
inline bool will_overflow(const PyThreadState* tstate) noexcept
{
#if PY_VERSION_HEX >= 0x030C0000
    return tstate->py_recursion_remaining <= 0 && tstate->recursion_headroom == 0;
#else
    const int remaining = tstate->recursion_remaining;
    return remaining <= 0 && tstate->recursion_headroom == 0 &&
           tstate->recursion_limit - remaining + 1 >= Py_GetRecursionLimit();
#endif
}

// 3.12 and 3.13 also count C recursion, and every frame the default evaluator
// enters from C takes from that count (which 3.11 does not have and 3.14
// replaces with the stack measure above): a recursion the interpreter runs
// inline untraced would meet the C limit (1,500 on 3.12.1) under the
// function. Half of it used counts as deep.
#if PY_VERSION_HEX >= 0x030D0000 && PY_VERSION_HEX < 0x030E0000
constexpr int k_c_recursion_deep = Py_C_RECURSION_LIMIT / 2;
#elif PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
constexpr int k_c_recursion_deep = C_RECURSION_LIMIT / 2;
#endif

inline bool is_recursion_deep([[maybe_unused]] const PyThreadState* tstate) noexcept
{
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030E0000
    return tstate->c_recursion_remaining < k_c_recursion_deep || is_stack_deep();
#else
    return is_stack_deep();
#endif
}

// From 3.12 a frame-evaluation function changes what a sys.settrace function
// sees: the interpreter then resumes a coroutine that `async for` awaits
// through its generic path, which reports each step's StopIteration twice
// (CPython's test_sys_settrace, with a function that only calls the default
// evaluator too). Once a thread has one set, the version's own back end
// serves. (3.11 resumes coroutines in the same way with or without it.) The
// thread's own function is what matters: it sees the thread's frames only.
inline bool is_settrace_set([[maybe_unused]] const PyThreadState* tstate) noexcept
{
#if PY_VERSION_HEX >= 0x030C0000
    return tstate->c_tracefunc != nullptr;
#else
    return false;
#endif
}

// Frames a profile function would not see: a generator's creation, which runs
// only as far as RETURN_GENERATOR; code run while the interpreter holds its
// tracing off (audit hooks, Python-level trace and profile functions); and a
// frame refused for recursion.
inline bool is_unseen(PyThreadState* tstate, _PyInterpreterFrame* frame) noexcept
{
    return ((code_of(frame)->co_flags & k_generator_kinds) != 0 &&
            frame->owner == FRAME_OWNED_BY_THREAD) ||
           tstate->tracing != 0 || will_overflow(tstate);
}

// The frame's evaluation once evaluate() has its code's info (read only when is_emitting): its
// call and return when is_emitting. Filtered-out code pays only the verdict lookup.
template <bool is_emitting>
inline PyObject* evaluate_as(PyThreadState* tstate, _PyInterpreterFrame* frame, int throwflag,
                             const CodeInfo* info, std::uint64_t epoch, bool is_announcer)
{
    if constexpr (is_emitting) {
        check_session();
        s_state.emitter->call(*info);
    }
    PyObject* result = _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    if (s_epoch == epoch) {
        if (is_announcer)
            --s_announcer_depth;
        if constexpr (is_emitting)
            s_state.emitter->ret(*info, result == nullptr);
    }
    return result;
}

// The coroutine or async generator whose frame this is, when it may be part of an asyncio task's
// await chain (its code is an async def's); else nullptr.
inline PyGenObject* awaiting_generator_of(const CodeInfo& info, _PyInterpreterFrame* frame) noexcept
{
    return info.is_coroutine || info.is_async_generator ? generator_of(frame) : nullptr;
}

// Whether a coroutine's evaluation that gave result left it suspended (it yielded) rather than
// finished. The generator outlives its frame's evaluation (whoever resumed it holds it).
inline bool has_yielded(const PyGenObject* generator, const PyObject* result) noexcept
{
    return generator != nullptr && result != nullptr && is_suspended(generator->gi_frame_state);
}

// evaluate_asyncio() for a task's root frame (of coroutine): a task's step around it, recorded
// whatever the filter says, which ends when the frame yields (the task suspends on what it
// yielded) or finishes.
[[gnu::noinline]] PyObject* evaluate_root(PyThreadState* tstate, _PyInterpreterFrame* frame,
                                          int throwflag, CodeInfo& info, std::uint64_t epoch,
                                          bool is_announcer, PyGenObject* coroutine,
                                          PyGenObject* task_root)
{
    check_session();
    const bool is_traced = (info.trace & k_traced) != 0;
    const tasks::Step step = tasks::enter_step(coroutine, is_traced, task_root);
    const bool is_recorded = tasks::records_root(step, is_traced);
    if (is_recorded) {
        register_root(info);
        s_state.emitter->call(info);
    }
    PyObject* result = _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    const bool is_yield = has_yielded(coroutine, result);
    if (s_epoch == epoch) {
        if (is_announcer)
            --s_announcer_depth;
        if (is_recorded)
            s_state.emitter->ret(info, result == nullptr);
    }
    const tasks::End end = result == nullptr ? tasks::End::raised
                           : is_yield        ? tasks::End::yielded
                                             : tasks::End::returned;
    tasks::leave_step(step, coroutine, end, is_yield ? result : nullptr);
    return result;
}

// evaluate_as() for code that plays a part in asyncio's tasks (k_asyncio): a task's root frame
// takes evaluate_root(); a traced coroutine frame's yield is one more frame the task's next step
// resumes; a factory hands over its new task. Inlined into evaluate(), whose saved registers it
// shares: as a function of its own it cost every coroutine frame another prologue (W4, 3.12:
// 0.2% to 0.4% of the traced run's instructions; the other paths are unchanged).
[[gnu::always_inline]] inline PyObject* evaluate_asyncio(PyThreadState* tstate,
                                                         _PyInterpreterFrame* frame, int throwflag,
                                                         CodeInfo& info, std::uint64_t epoch,
                                                         bool is_announcer)
{
    PyGenObject* generator = awaiting_generator_of(info, frame);
    if (generator != nullptr && info.is_coroutine) {
        _PyInterpreterFrame* caller = innermost_frame(tstate);
        if (is_root(caller))
            return evaluate_root(tstate, frame, throwflag, info, epoch, is_announcer, generator,
                                 nullptr);
        if (tasks::is_between_steps()) [[unlikely]] {
            PyGenObject* task_root = chain_root(caller);
            if (task_root != nullptr && task_root != generator && tasks::is_task(task_root))
                return evaluate_root(tstate, frame, throwflag, info, epoch, is_announcer, generator,
                                     task_root);
        }
        if (tasks::has_eager_hint() && tasks::is_eager_start(generator)) [[unlikely]]
            return evaluate_root(tstate, frame, throwflag, info, epoch, is_announcer, generator,
                                 nullptr);
    }
    const bool is_traced = (info.trace & k_traced) != 0;
    if (is_traced) {
        check_session();
        s_state.emitter->call(info);
    }
    PyObject* result = _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    if (s_epoch == epoch) {
        if (is_announcer)
            --s_announcer_depth;
        if (is_traced)
            s_state.emitter->ret(info, result == nullptr);
    }
    if (is_traced && has_yielded(generator, result) &&
        (info.is_coroutine || !tasks::is_async_yield(result)))
        tasks::on_yield();
    if (info.is_task_factory && result != nullptr)
        tasks::on_factory_return(result, info.is_task_adopter);
    if (info.is_eager_probe)
        tasks::on_probe_return(result);
    return result;
}

PyObject* evaluate(PyThreadState* tstate, _PyInterpreterFrame* frame, int throwflag)
{
    if (is_unseen(tstate, frame))
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    PyCodeObject* code = code_of(frame);
    if (is_recursion_deep(tstate) || is_settrace_set(tstate)) {
        // The version's back end sees this frame start, and the others return.
        hand_over();
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    const std::uint64_t epoch = s_epoch;
    const bool is_announcer = tstate == s_announcer && tstate->id == s_announcer_id;
    if (is_announcer) {
        if (s_announcer_depth == 0)
            close_returned(innermost_frame(tstate)); // the caller's stack
        ++s_announcer_depth;
    }
    CodeInfo* info = info_for_code_in(code, frame->f_globals);
    if (info != nullptr && info->trace == k_traced) [[likely]]
        return evaluate_as<true>(tstate, frame, throwflag, info, epoch, is_announcer);
    if (info != nullptr && info->trace != 0) [[unlikely]]
        return evaluate_asyncio(tstate, frame, throwflag, *info, epoch, is_announcer);
    return evaluate_as<false>(tstate, frame, throwflag, info, epoch, is_announcer);
}

// ------------------------------------------------------------------- probe
//
// Whether the interpreter calls the function for every Python frame it
// enters: each way in that a specialised instruction can take inline (calls
// plain, by keyword, with defaults and of a method, a __getitem__, a property,
// a __getattribute__, a class's __init__, a generator driven by `for` and by
// `yield from`), 1,000 times in a loop that warms up (specialises)
// meanwhile, counted by a function that only counts. Debian 12's 3.11.2
// enters a warmed __getitem__ inline, pyenv's 3.13.0 a warmed __init__.

const char* const k_probe_source = "class Probe:\n"
                                   "    def __init__(self):\n"
                                   "        pass\n"
                                   "    def __getitem__(self, key):\n"
                                   "        return key\n"
                                   "    @property\n"
                                   "    def value(self):\n"
                                   "        return 1\n"
                                   "    def method(self, x):\n"
                                   "        return x\n"
                                   "class Hidden:\n"
                                   "    def __getattribute__(self, name):\n"
                                   "        return 1\n"
                                   "def probed(x, y=0):\n"
                                   "    return x\n"
                                   "def generate(n):\n"
                                   "    for i in range(n):\n"
                                   "        yield i\n"
                                   "def delegate(n):\n"
                                   "    yield from generate(n)\n"
                                   "def run(n):\n"
                                   "    probe = Probe()\n"
                                   "    hidden = Hidden()\n"
                                   "    for i in range(n):\n"
                                   "        probe[i]\n"
                                   "        probed(i)\n"
                                   "        probed(x=i)\n"
                                   "        probed(i, 1)\n"
                                   "        probe.value\n"
                                   "        probe.method(i)\n"
                                   "        hidden.anything\n"
                                   "        Probe()\n"
                                   "    for i in generate(n):\n"
                                   "        pass\n"
                                   "    for i in delegate(n):\n"
                                   "        pass\n";
constexpr long k_probe_calls = 1000;
// run, its first Probe(), 8 entries an iteration; generate's creation and
// n + 1 resumptions; delegate's the same, each also resuming generate's
// (created once more).
constexpr long k_probe_entries =
    2 + 8 * k_probe_calls + (k_probe_calls + 2) + 2 * (k_probe_calls + 2);

const char* const k_probe_file = "<pyust probe>";
PyObject* s_probe_file = nullptr; // the probe's code objects' co_filename
long s_probed_entries = 0;

PyObject* count_entries(PyThreadState* tstate, _PyInterpreterFrame* frame, int throwflag)
{
    if (code_of(frame)->co_filename == s_probe_file)
        ++s_probed_entries;
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

bool run_probe() noexcept
{
    compat::SavedError saved;
    PyObject* globals = PyDict_New();
    if (globals == nullptr ||
        PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) {
        Py_XDECREF(globals);
        PyErr_Clear();
        return false;
    }
    bool is_exact = false;
    PyObject* code = Py_CompileString(k_probe_source, k_probe_file, Py_file_input);
    PyObject* done = code != nullptr ? PyEval_EvalCode(code, globals, globals) : nullptr;
    PyObject* run = PyDict_GetItemString(globals, "run"); // borrowed
    if (done != nullptr && run != nullptr) {
        PyInterpreterState* interp = PyInterpreterState_Get();
        s_probe_file = reinterpret_cast<PyCodeObject*>(code)->co_filename;
        s_probed_entries = 0;
        _PyInterpreterState_SetEvalFrameFunc(interp, count_entries);
        PyObject* ran = PyObject_CallFunction(run, "l", k_probe_calls);
        _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
        is_exact = ran != nullptr && s_probed_entries == k_probe_entries;
        if (std::getenv("PYUST_DEBUG_PROBE") != nullptr)
            std::fprintf(stderr, "pyust: probe: %ld entries of %ld\n", s_probed_entries,
                         k_probe_entries);
        Py_XDECREF(ran);
        s_probe_file = nullptr;
    }
    Py_XDECREF(done);
    Py_XDECREF(code);
    PyDict_Clear(globals); // the functions and the class refer back to it
    Py_DECREF(globals);
    PyErr_Clear();
    return is_exact;
}

bool is_exact() noexcept
{
    static const bool is_exact = run_probe();
    return is_exact;
}

bool is_python_running_elsewhere(PyThreadState* self) noexcept
{
    PyInterpreterState* interp = PyThreadState_GetInterpreter(self);
    for (PyThreadState* t = PyInterpreterState_ThreadHead(interp); t != nullptr;
         t = PyThreadState_Next(t)) {
        if (t != self && innermost_frame(t) != nullptr)
            return true;
    }
    return false;
}

} // namespace

const char* why_not(const Options& options) noexcept
{
    if (options.lines || options.c_calls)
        return "lines or C calls";
    // PYUST_BACKEND=setprofile (3.11) or monitoring (3.12 on) keeps the
    // version's own back end.
    if (const char* forced = std::getenv("PYUST_BACKEND");
        forced != nullptr && *forced != '\0' && std::strcmp(forced, "eval-frame") != 0)
        return "PYUST_BACKEND names another back end";
    PyThreadState* self = PyThreadState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(PyThreadState_GetInterpreter(self)) !=
        _PyEval_EvalFrameDefault)
        return "another tool's frame-evaluation function is in";
    if (is_settrace_set(self))
        return "a sys.settrace() function is set";
    if (is_python_running_elsewhere(self))
        return "another thread runs Python code";
    if (!is_exact())
        return "this interpreter skips the function for some calls";
    return nullptr;
}

void choose(const Options& options) noexcept
{
    s_is_chosen = why_not(options) == nullptr;
}

bool is_chosen() noexcept
{
    return s_is_chosen;
}

bool install_if_chosen(bool is_caller_announced) noexcept
{
    s_is_chosen = s_is_chosen && is_caller_announced;
    if (!s_is_chosen)
        return false;
    ++s_epoch;
    PyThreadState* self = PyThreadState_Get();
    s_announced.clear();
    s_announcer_depth = 0;
    try {
        for (_PyInterpreterFrame* f = innermost_frame(self); f != nullptr; f = f->previous) {
            if (!is_complete(f))
                continue;
            const CodeInfo* info = info_for_code_in(code_of(f), f->f_globals);
            if (is_traced(info))
                s_announced.push_back({f, info});
        }
    } catch (const std::bad_alloc&) {
        s_announced.clear(); // those frames will show as never returning
    }
    std::reverse(s_announced.begin(), s_announced.end());
    s_announcer = s_announced.empty() ? nullptr : self;
    s_announcer_id = self->id;
    _PyInterpreterState_SetEvalFrameFunc(PyThreadState_GetInterpreter(self), evaluate);
    detail::s_is_installed = true;
    return true;
}

void uninstall(bool close_stacks) noexcept
{
    if (!detail::s_is_installed)
        return;
    PyThreadState* self = PyThreadState_Get();
    PyInterpreterState* interp = PyThreadState_GetInterpreter(self);
    if (_PyInterpreterState_GetEvalFrameFunc(interp) == evaluate)
        _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
    ++s_epoch;
    detail::s_is_installed = false;
    if (close_stacks && self == s_announcer && self->id == s_announcer_id)
        close_returned(innermost_frame(self));
    s_announced.clear();
    s_announcer = nullptr;
}

bool is_running_frame_of(PyObject* code) noexcept
{
    _PyInterpreterFrame* frame = innermost_frame(PyThreadState_Get());
    return frame != nullptr && reinterpret_cast<PyObject*>(code_of(frame)) == code;
}

} // namespace pyust::hook::eval_frame

// The back-end interface's reader of the innermost frame (backend.hpp): this back end's
// access to the interpreter's frames, whichever back end serves the start.
namespace pyust::hook::backend {

bool innermost_runs(PyObject* code, PyObject*& globals) noexcept
{
    _PyInterpreterFrame* frame = frames::innermost_complete(PyThreadState_Get());
    globals = frame != nullptr && reinterpret_cast<PyObject*>(frames::code_of(frame)) == code
                  ? frame->f_globals
                  : nullptr;
    return frame != nullptr;
}

#if PYUST_HAS_PER_THREAD_SETTERS
const void* root_coroutine_of(PyFrameObject* frame) noexcept
{
    _PyInterpreterFrame* running = frame->f_frame;
    return frames::is_root(running->previous) ? frames::generator_of(running) : nullptr;
}

Chain chain_of(PyFrameObject* frame) noexcept
{
    return frames::chain_of(frame->f_frame);
}

bool has_yielded(PyFrameObject* frame) noexcept
{
    // The interpreter marks the generator suspended before it tells the profile function.
    const PyGenObject* generator = frames::generator_of(frame->f_frame);
    return generator != nullptr && frames::is_suspended(generator->gi_frame_state);
}
#endif

} // namespace pyust::hook::backend

namespace pyust::hook::eval_frame {

[[gnu::cold, gnu::noinline]] void hand_over() noexcept
{
    compat::SavedError saved; // a frame entered to have an exception thrown in
    uninstall(true);
    s_is_chosen = false;
    take_over();
    PyErr_Clear();
    emit_process();
}

} // namespace pyust::hook::eval_frame

#endif // PYUST_HAS_EVAL_BACKEND
