// The back end up to Python 3.11: C profile and trace functions installed on
// each thread state (PyEval_SetProfile/PyEval_SetTrace and their per-thread
// variants). Without line tracing the profile function carries calls and
// returns; with it, the trace function does (it sees the lines too) and the
// profile function only carries C calls, when those are on.
//
// A thread that was running when tracing started gets "first" callbacks that
// announce its stack, then switch it to the steady ones; after stop(), a
// thread gets a "closing" callback that closes its stack at its next event.
// So each thread's events are balanced, on its own vtid.
//
// On 3.11 the fast mode runs on the frame-evaluation back end instead when it
// can (backend_eval.hpp): this file chooses, and closes the other threads'
// stacks for it at stop().
#include "hook/python_compat.hpp"

#if PYUST_HAS_PER_THREAD_SETTERS

#include <cstdio>
#include <cstring>

#include "hook/backend.hpp"
#include "hook/backend_eval.hpp"
#include "hook/registration.hpp"
#include "hook/session.hpp"
#include "hook/stacks.hpp"
#include "hook/state.hpp"
#include "hook/tasks.hpp"

namespace pyust::hook {
namespace {

// True while pyust itself sets profile/trace functions (see audit_hook).
bool s_is_installing = false;

// The thread's last frame and its CodeInfo: the lines of a frame and its
// return usually follow its call with no other event of the thread between,
// and then skip the code-object lookup. A call or a return replaces the entry,
// so a frame object freed and reused for other code (which starts with a
// call) is never taken for the old one; the generation drops entries made
// under another start().
struct LastFrame {
    PyFrameObject* frame = nullptr;
    CodeInfo* info = nullptr;
    std::uint32_t generation = 0;
};

thread_local LastFrame t_last __attribute__((tls_model("initial-exec")));

inline CodeInfo* info_of(PyFrameObject* frame) noexcept
{
    if (t_last.frame == frame && t_last.generation == s_state.generation)
        return t_last.info;
    CodeInfo* info = info_for_frame(frame);
    t_last = {frame, info, s_state.generation};
    return info;
}

// The roots of asyncio task steps open on this thread (tasks.hpp), innermost last: each
// frame, its coroutine, and its step (tasks::enter_step()). An eager task's first step nests
// in its creator's; past k_max_roots nested steps, the deeper ones go unannounced.
struct OpenRoot {
    PyFrameObject* frame;
    const void* coroutine;
    tasks::Step step;
};
constexpr int k_max_roots = 16;
thread_local OpenRoot t_roots[k_max_roots] __attribute__((tls_model("initial-exec")));
thread_local int t_root_count __attribute__((tls_model("initial-exec"))) = 0;

// The coroutine object of a coroutine's frame that starts or resumes, when it is a task's root:
// its caller is no coroutine or generator awaiting it (Handle._run for the C Task's step,
// Task.__step for the pure-Python one's). Else nullptr.
inline const void* root_coroutine(PyFrameObject* frame) noexcept
{
#if PY_VERSION_HEX >= 0x030B0000
    return backend::root_coroutine_of(frame);
#else
    const PyFrameObject* caller = frame->f_back;
    const bool is_awaited =
        caller != nullptr &&
        (caller->f_code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0;
    return is_awaited ? nullptr : frame->f_gen;
#endif
}

// The frame's coroutine and, when its caller is a coroutine's or a generator's frame, the
// coroutine of the outermost frame of that run of callers (see backend::Chain).
inline backend::Chain chain_of(PyFrameObject* frame) noexcept
{
#if PY_VERSION_HEX >= 0x030B0000
    return backend::chain_of(frame);
#else
    const void* root = nullptr;
    for (PyFrameObject* caller = frame->f_back;
         caller != nullptr &&
         (caller->f_code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0;
         caller = caller->f_back)
        root = caller->f_gen;
    return {frame, frame->f_gen, root};
#endif
}

// Whether a coroutine's frame that returns to the profile function yielded (it is suspended)
// rather than returned for good: the interpreter marks it suspended before it tells.
inline bool has_yielded(PyFrameObject* frame) noexcept
{
#if PY_VERSION_HEX >= 0x030B0000
    return backend::has_yielded(frame);
#else
    return frame->f_state == FRAME_SUSPENDED;
#endif
}

// The call of a task's root frame (of coroutine): a task's step starts, and the call is recorded
// whatever the filter says (an inner root's as it says).
[[gnu::noinline]] void on_root_call(PyFrameObject* frame, CodeInfo& info, const void* coroutine,
                                    const void* task_root = nullptr) noexcept
{
    check_session();
    const bool is_traced = (info.trace & k_traced) != 0;
    const tasks::Step step = tasks::enter_step(coroutine, is_traced, task_root);
    t_roots[t_root_count++] = {frame, coroutine, step};
    if (tasks::records_root(step, is_traced)) {
        register_root(info);
        s_state.emitter->call(info);
    }
}

// The frame that called a root frame when it is a step runner's (tasks::Role::step_runner),
// else nullptr: a task whose root raised ends when that frame returns.
const void* step_runner_of(PyFrameObject* root) noexcept
{
    PyFrameObject* caller = PyFrame_GetBack(root);
    if (caller == nullptr)
        return nullptr;
    const CodeInfo* info = info_for_frame(caller);
    Py_DECREF(caller); // the caller outlives its callee's return
    return info != nullptr && info->is_step_runner ? caller : nullptr;
}

// The call of code that plays a part in asyncio's tasks (k_asyncio): a root's takes
// on_root_call(); others are recorded as the filter says.
[[gnu::noinline]] void on_asyncio_call(PyFrameObject* frame, CodeInfo& info) noexcept
{
    if (info.is_coroutine && t_root_count < k_max_roots) {
        if (const void* coroutine = root_coroutine(frame))
            return on_root_call(frame, info, coroutine);
        if (tasks::is_between_steps()) [[unlikely]] { // an inner root?
            const backend::Chain chain = chain_of(frame);
            if (chain.task_root != nullptr && chain.task_root != chain.coroutine &&
                tasks::is_task(chain.task_root))
                return on_root_call(frame, info, chain.coroutine, chain.task_root);
        }
        if (tasks::has_eager_hint()) [[unlikely]] {
            const void* coroutine = chain_of(frame).coroutine;
            if (tasks::is_eager_start(coroutine))
                return on_root_call(frame, info, coroutine);
        }
    }
    if ((info.trace & k_traced) != 0) {
        check_session();
        s_state.emitter->call(info);
    }
}

// The return of a task's root frame (the thread's innermost open root): the task's step ends,
// the task suspended (a yield, on value) or ended (when it raised, at its step runner's return).
[[gnu::noinline]] void on_root_return(PyFrameObject* frame, const CodeInfo& info, bool is_unwind,
                                      PyObject* value) noexcept
{
    const OpenRoot& root = t_roots[--t_root_count];
    if (tasks::records_root(root.step, (info.trace & k_traced) != 0))
        s_state.emitter->ret(info, is_unwind);
    const bool is_yield = !is_unwind && has_yielded(frame);
    const tasks::End end = is_unwind  ? tasks::End::raised
                           : is_yield ? tasks::End::yielded
                                      : tasks::End::returned;
    tasks::leave_step(root.step, root.coroutine, end, is_yield ? value : nullptr,
                      is_unwind ? step_runner_of(frame) : nullptr);
}

// The return of code that plays a part in asyncio's tasks (value: what it returned or yielded,
// nullptr when it raised): a root's takes on_root_return(); a traced coroutine frame's yield (an
// async generator's in an await) is one more frame the task's next step resumes; a factory hands
// over its new task; a step runner ends a task whose root raised.
[[gnu::noinline]] void on_asyncio_return(PyFrameObject* frame, const CodeInfo& info, bool is_unwind,
                                         PyObject* value) noexcept
{
    if (info.is_step_runner)
        tasks::on_runner_return(frame);
    if (t_root_count > 0 && t_roots[t_root_count - 1].frame == frame)
        return on_root_return(frame, info, is_unwind, value);
    if ((info.trace & k_traced) != 0) {
        s_state.emitter->ret(info, is_unwind);
        const bool is_yield =
            (info.is_coroutine || info.is_async_generator) && !is_unwind && has_yielded(frame);
        if (is_yield && (info.is_coroutine || !tasks::is_async_yield(value)))
            tasks::on_yield();
    }
    if (info.is_task_factory && !is_unwind)
        tasks::on_factory_return(value, info.is_task_adopter);
    if (info.is_eager_probe)
        tasks::on_probe_return(is_unwind ? nullptr : value);
}

// Filtered-out calls and returns pay only the verdict lookup; asyncio's take their own path.
// Both are inlined into the callbacks, which hold the frame and the returned value in registers
// they save anyway: a function of its own would save them again, on every return, for the
// asyncio path alone.
[[gnu::always_inline]] inline void on_call(PyFrameObject* frame) noexcept
{
    t_last.frame = nullptr;
    CodeInfo* info = info_of(frame);
    if (info != nullptr && info->trace == k_traced) [[likely]] {
        check_session();
        s_state.emitter->call(*info);
    } else if (info != nullptr && info->trace != 0) [[unlikely]] {
        on_asyncio_call(frame, *info);
    }
}

[[gnu::always_inline]] inline void on_return(PyFrameObject* frame, bool is_unwind,
                                             PyObject* value) noexcept
{
    const CodeInfo* info = info_of(frame);
    t_last.frame = nullptr; // the frame is done: its memory may be reused
    if (info != nullptr && info->trace == k_traced) [[likely]]
        s_state.emitter->ret(*info, is_unwind);
    else if (info != nullptr && info->trace != 0) [[unlikely]]
        on_asyncio_return(frame, *info, is_unwind, value);
}

// C calls are recorded only from traced Python code (the pyust runner's own
// exec() of the target, say, is not).
void on_c_call(PyFrameObject* frame, PyObject* callable) noexcept
{
    if (!is_traced(info_of(frame)))
        return;
    const char* name = "?";
    const char* owner = "?";
    c_function_names(callable, &name, &owner);
    s_state.emitter->c_call(name, owner);
}

void on_c_return(PyFrameObject* frame, bool has_raised) noexcept
{
    if (is_traced(info_of(frame)))
        s_state.emitter->c_return(has_raised);
}

int profile_callback(PyObject*, PyFrameObject* frame, int what, PyObject* arg) noexcept
{
    switch (what) {
    case PyTrace_CALL:
        if (!s_state.options.lines)
            on_call(frame);
        break;
    case PyTrace_RETURN:
        if (!s_state.options.lines)
            on_return(frame, arg == nullptr, arg);
        break;
    case PyTrace_C_CALL:
        if (s_state.options.c_calls)
            on_c_call(frame, arg);
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (s_state.options.c_calls)
            on_c_return(frame, what == PyTrace_C_EXCEPTION);
        break;
    default:
        break;
    }
    return 0;
}

int trace_callback(PyObject*, PyFrameObject* frame, int what, PyObject* arg) noexcept
{
    switch (what) {
    case PyTrace_CALL:
        on_call(frame);
        break;
    case PyTrace_RETURN:
        on_return(frame, arg == nullptr, arg);
        break;
    case PyTrace_LINE: {
        const CodeInfo* info = info_of(frame);
        if (is_traced(info))
            s_state.emitter->line(*info, static_cast<std::uint32_t>(PyFrame_GetLineNumber(frame)));
        break;
    }
    default:
        break;
    }
    return 0;
}

void install_on_current(bool is_first) noexcept;

// First event on a thread that was running when tracing started: announce
// its stack, then switch to the steady callbacks and handle the event. A new
// frame (call) is not on the stack yet: the steady callback opens it.
void begin_thread(PyFrameObject* frame, int what) noexcept
{
    PyFrameObject* open = open_part(frame, what == PyTrace_CALL);
    open_stack(open);
    Py_XDECREF(open);
    install_on_current(false);
}

int first_profile_callback(PyObject* obj, PyFrameObject* frame, int what, PyObject* arg) noexcept
{
    begin_thread(frame, what);
    return profile_callback(obj, frame, what, arg);
}

int first_trace_callback(PyObject* obj, PyFrameObject* frame, int what, PyObject* arg) noexcept
{
    begin_thread(frame, what);
    return trace_callback(obj, frame, what, arg);
}

bool is_ours(Py_tracefunc fn) noexcept;

// Last event on a thread after stop(): close its stack and unhook it. A frame
// being called was never opened, so only its callers are closed.
int closing_callback(PyObject*, PyFrameObject* frame, int what, PyObject*) noexcept
{
    PyFrameObject* open = open_part(frame, what == PyTrace_CALL);
    close_stack(open);
    Py_XDECREF(open);
    PyThreadState* self = PyThreadState_Get();
    if (compat::set_profile(self, nullptr) < 0 ||
        (is_ours(self->c_tracefunc) && compat::set_trace(self, nullptr) < 0))
        PyErr_Clear();
    return 0;
}

Py_tracefunc profile_for(bool is_first) noexcept
{
    if (s_state.options.lines)
        return s_state.options.c_calls ? profile_callback : nullptr;
    return is_first ? first_profile_callback : profile_callback;
}

Py_tracefunc trace_for(bool is_first) noexcept
{
    if (!s_state.options.lines)
        return nullptr;
    return is_first ? first_trace_callback : trace_callback;
}

// The trace function is touched only when line tracing uses it: without
// lines, coverage.py or a debugger keeps its own.
void install_on_current(bool is_first) noexcept
{
    s_is_installing = true;
    PyThreadState* self = PyThreadState_Get();
    if (compat::set_profile(self, profile_for(is_first)) < 0 ||
        (s_state.options.lines && compat::set_trace(self, trace_for(is_first)) < 0))
        PyErr_Clear();
    s_is_installing = false;
}

// Applies fn(tstate) to every other thread state of the caller's interpreter.
template <typename F> void for_each_other_thread(F&& fn)
{
    PyThreadState* self = PyThreadState_Get();
    PyInterpreterState* interp = PyThreadState_GetInterpreter(self);
    for (PyThreadState* t = PyInterpreterState_ThreadHead(interp); t != nullptr;
         t = PyThreadState_Next(t)) {
        if (t != self)
            fn(t);
    }
}

bool is_ours(Py_tracefunc fn) noexcept
{
    return fn == profile_callback || fn == trace_callback || fn == first_profile_callback ||
           fn == first_trace_callback || fn == closing_callback;
}

// A thread has one profile and one trace function. When another tool
// (cProfile, a debugger, coverage.py with lines on) replaces pyust's while it
// traces, pyust cannot keep recording that thread: say so, once, rather than
// lose its events silently. (The audit event precedes the replacement.)
int audit_hook(const char* event, PyObject*, void*) noexcept
{
    static bool has_warned = false;
    if (!s_state.is_active || s_is_installing || has_warned)
        return 0;
    const bool is_profile = std::strcmp(event, "sys.setprofile") == 0;
    const bool is_trace = std::strcmp(event, "sys.settrace") == 0;
    if (!is_profile && !is_trace)
        return 0;
    PyThreadState* self = PyThreadState_Get();
    if (!is_ours(is_profile ? self->c_profilefunc : self->c_tracefunc))
        return 0;
    has_warned = true;
    std::fprintf(stderr,
                 "pyust: warning: %s() replaced pyust's hook on thread %lld while tracing "
                 "(another profiler or debugger?): pyust records no more events from that "
                 "thread\n",
                 event, static_cast<long long>(current_tid()));
    return 0;
}

void add_audit_hook() noexcept
{
    static bool has_audit_hook = false;
    if (!has_audit_hook) {
        if (PySys_AddAuditHook(audit_hook, nullptr) < 0)
            PyErr_Clear();
        has_audit_hook = true;
    }
}

} // namespace

#if PYUST_HAS_EVAL_BACKEND
// Every frame running now was announced or entered under the function: each
// thread gets the steady callbacks, which see those frames return. (A thread
// whose profile slot another tool took meanwhile, cProfile say, keeps it: its
// open frames stay open in the trace.)
void eval_frame::take_over() noexcept
{
    add_audit_hook();
    s_is_installing = true;
    PyThreadState* self = PyThreadState_Get();
    for (PyThreadState* t = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(self));
         t != nullptr; t = PyThreadState_Next(t)) {
        if (t->c_profilefunc == nullptr && compat::set_profile(t, profile_for(false)) < 0)
            PyErr_Clear();
    }
    s_is_installing = false;
}
#endif

namespace backend {

const char* name() noexcept
{
    return eval_frame::name_or("setprofile");
}

// Another tool (cProfile, a debugger, coverage.py) holds the interpreter's
// hook pyust needs: say which, rather than silently displacing it.
void check_free()
{
    PyThreadState* self = PyThreadState_Get();
    if (self->c_profilefunc != nullptr && !is_ours(self->c_profilefunc))
        throw TracerError("Cannot start tracing: another profiler is active on this thread "
                          "(sys.getprofile() is set, e.g. by cProfile); stop it first");
    if (s_state.options.lines && self->c_tracefunc != nullptr && !is_ours(self->c_tracefunc))
        throw TracerError("Cannot start line tracing: another tracer is active on this thread "
                          "(sys.gettrace() is set, e.g. by a debugger or coverage.py); stop "
                          "it first or trace without lines");
#if PYUST_HAS_EVAL_BACKEND
    eval_frame::choose(s_state.options);
#endif
}

void install(bool is_caller_announced)
{
    add_audit_hook();
#if PYUST_HAS_EVAL_BACKEND
    if (eval_frame::install_if_chosen(is_caller_announced))
        return;
#endif
    if (is_caller_announced)
        install_on_current(false);
    s_is_installing = true;
    for_each_other_thread([](PyThreadState* t) {
        // A thread still closing from the last stop() has its frames open in
        // the trace already: it resumes without announcing them again.
        const bool is_first = t->c_profilefunc != closing_callback;
        if (compat::set_profile(t, profile_for(is_first)) < 0 ||
            (s_state.options.lines && compat::set_trace(t, trace_for(is_first)) < 0))
            PyErr_Clear();
    });
    s_is_installing = false;
}

void uninstall(bool close_stacks) noexcept
{
#if PYUST_HAS_EVAL_BACKEND
    if (eval_frame::is_installed()) {
        eval_frame::uninstall(close_stacks);
        // The other threads' frames all started under the function: the
        // closing callback closes them at each thread's next event.
        s_is_installing = true;
        for_each_other_thread([close_stacks](PyThreadState* t) {
            if (close_stacks && t->c_profilefunc == nullptr &&
                t->cframe->current_frame != nullptr && compat::set_profile(t, closing_callback) < 0)
                PyErr_Clear();
        });
        s_is_installing = false;
        return;
    }
#endif
    s_is_installing = true;
    PyThreadState* self = PyThreadState_Get();
    if ((is_ours(self->c_profilefunc) && compat::set_profile(self, nullptr) < 0) ||
        (is_ours(self->c_tracefunc) && compat::set_trace(self, nullptr) < 0))
        PyErr_Clear();
    for_each_other_thread([close_stacks](PyThreadState* t) {
        // The closing callback takes the profile slot, unless another tool
        // holds it: that thread's frames then stay open in the trace.
        const bool is_hooked = is_ours(t->c_profilefunc) || is_ours(t->c_tracefunc);
        const bool may_close = is_ours(t->c_profilefunc) || t->c_profilefunc == nullptr;
        Py_tracefunc last = close_stacks ? closing_callback : nullptr;
        if ((is_ours(t->c_tracefunc) && compat::set_trace(t, nullptr) < 0) ||
            (is_hooked && may_close && compat::set_profile(t, last) < 0))
            PyErr_Clear();
    });
    s_is_installing = false;
}

void attach_current_thread() noexcept
{
#if PYUST_HAS_EVAL_BACKEND
    if (eval_frame::is_installed())
        return; // the function serves every thread of the interpreter
#endif
    install_on_current(true);
}

} // namespace backend
} // namespace pyust::hook

#endif // PYUST_HAS_PER_THREAD_SETTERS
