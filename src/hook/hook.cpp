// The CPython hook (see hook.hpp). Up to Python 3.11 it is a pair of C
// profile/trace functions installed per thread state.
//
// Hot path: a callback looks up the CodeInfo pointer cached on the code object
// (co_extra) and hands it to the Emitter. The first event of a code object
// registers it (allocations happen there, once per code object). Callbacks
// never raise: any C-API failure is cleared and the event is named "?".
#include "hook.hpp"

#include <csignal>
#include <memory>
#include <new>
#include <vector>

#include <pthread.h>
#include <sys/types.h>
#include <unistd.h>

#include <lttng/ust-fork.h>

#include "emitter.hpp"
#include "prefix_table.hpp"
#include "python_compat.hpp"
#include "registry.hpp"

namespace pyust::hook {
namespace {

struct State {
    bool is_initialised = false;
    bool is_active = false;
    bool was_code_enabled = false; // python:code enabled at the last check
    Options options;
    prefix::Filter filter;       // the module filter of the current start()
    std::uint32_t generation = 1; // the filter's generation (see CodeInfo)
    Py_ssize_t extra_index = -1;
    std::string own_dir;
    std::unique_ptr<Registry> registry;
    Emitter* emitter = nullptr;
    // Fork protocol: LTTng-UST's saved signal mask, and the forking thread.
    sigset_t fork_sigset;
    std::int64_t forking_tid = 0;
};

State g; // guarded by the GIL

const char* const k_unknown = "?";

// UTF-8 of a str object, or "?" (the object's cache keeps the bytes alive as
// long as the object lives; callers copy them).
const char* utf8_or_unknown(PyObject* obj) noexcept
{
    if (obj == nullptr || !PyUnicode_Check(obj))
        return k_unknown;
    const char* text = PyUnicode_AsUTF8(obj);
    if (text == nullptr) {
        PyErr_Clear();
        return k_unknown;
    }
    return text;
}

bool starts_with(const std::string& text, const std::string& prefix) noexcept
{
    return !prefix.empty() && text.compare(0, prefix.size(), prefix) == 0;
}

// Takes the code object's verdict under the current filter (pyust's own code
// is never traced) and registers it in the trace when it becomes traced.
void decide(CodeInfo& info) noexcept
{
    const bool was_traced = info.is_traced;
    info.generation = g.generation;
    info.is_traced = !info.is_hidden && !starts_with(info.file, g.own_dir) &&
                     g.filter.is_traced(info.module);
    if (info.is_traced && !was_traced)
        g.emitter->code(info);
}

// Registers the code object running in frame: assigns its id, decides
// whether it is traced, emits python:code. Returns nullptr only when memory
// runs out (the event is then dropped, the program goes on).
CodeInfo* register_code(PyCodeObject* code, PyFrameObject* frame) noexcept
{
    compat::SavedError saved;
    try {
        std::string module = k_unknown;
        if (PyObject* globals = compat::frame_globals(frame)) {
            if (PyDict_Check(globals)) {
                PyObject* name = PyDict_GetItemString(globals, "__name__"); // borrowed
                module = utf8_or_unknown(name);
            }
            Py_DECREF(globals);
        }
        std::string file = utf8_or_unknown(code->co_filename);
        CodeInfo& info =
            g.registry->add(std::move(module), utf8_or_unknown(compat::code_qualname(code)),
                            std::move(file), static_cast<std::uint32_t>(code->co_firstlineno),
                            false);
        decide(info);
        compat::set_code_extra(code, g.extra_index, &info);
        return &info;
    } catch (...) {
        return nullptr;
    }
}

const CodeInfo* info_for(PyFrameObject* frame) noexcept
{
    PyCodeObject* code = PyFrame_GetCode(frame);
    auto* info = static_cast<CodeInfo*>(compat::get_code_extra(code, g.extra_index));
    if (info == nullptr)
        info = register_code(code, frame);
    else if (info->generation != g.generation)
        decide(*info);
    Py_DECREF(code);
    return info;
}

// A session may have started since the last call: if python:code just became
// enabled, the names seen so far are not in it yet.
void check_session() noexcept
{
    const bool is_enabled = g.emitter->is_code_enabled();
    if (is_enabled != g.was_code_enabled) {
        g.was_code_enabled = is_enabled;
        if (is_enabled)
            rundown();
    }
}

void on_call(PyFrameObject* frame) noexcept
{
    check_session();
    const CodeInfo* info = info_for(frame);
    if (info != nullptr && info->is_traced)
        g.emitter->call(*info);
}

void on_return(PyFrameObject* frame, bool is_unwind) noexcept
{
    const CodeInfo* info = info_for(frame);
    if (info != nullptr && info->is_traced)
        g.emitter->ret(*info, is_unwind);
}

// C calls are recorded only from traced Python code (the pyust runner's own
// exec() of the target, say, is not).
bool is_traced_frame(PyFrameObject* frame) noexcept
{
    const CodeInfo* info = info_for(frame);
    return info != nullptr && info->is_traced;
}

void c_function_names(PyObject* callable, const char** name, const char** owner) noexcept
{
    if (PyCFunction_Check(callable)) {
        auto* function = reinterpret_cast<PyCFunctionObject*>(callable);
        *name = function->m_ml->ml_name;
        if (function->m_module != nullptr && PyUnicode_Check(function->m_module))
            *owner = utf8_or_unknown(function->m_module);
        else if (function->m_self != nullptr && !PyModule_Check(function->m_self))
            *owner = Py_TYPE(function->m_self)->tp_name;
        else
            *owner = "";
    } else if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
        auto* descr = reinterpret_cast<PyMethodDescrObject*>(callable);
        *name = descr->d_method->ml_name;
        *owner = PyDescr_TYPE(descr)->tp_name;
    } else {
        *name = Py_TYPE(callable)->tp_name;
        *owner = "";
    }
}

void on_c_call(PyFrameObject* frame, PyObject* callable) noexcept
{
    if (!is_traced_frame(frame))
        return;
    const char* name = k_unknown;
    const char* owner = k_unknown;
    c_function_names(callable, &name, &owner);
    g.emitter->c_call(name, owner);
}

void on_c_return(PyFrameObject* frame, bool has_raised) noexcept
{
    if (is_traced_frame(frame))
        g.emitter->c_return(has_raised);
}

// The steady-state callbacks. Without line tracing the profile function
// carries calls and returns; with it, the trace function does (it sees the
// lines too) and the profile function only carries C calls, when those are on.
int profile_callback(PyObject*, PyFrameObject* frame, int what, PyObject* arg) noexcept
{
    switch (what) {
    case PyTrace_CALL:
        if (!g.options.lines)
            on_call(frame);
        break;
    case PyTrace_RETURN:
        if (!g.options.lines)
            on_return(frame, arg == nullptr);
        break;
    case PyTrace_C_CALL:
        if (g.options.c_calls)
            on_c_call(frame, arg);
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (g.options.c_calls)
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
        on_return(frame, arg == nullptr);
        break;
    case PyTrace_LINE: {
        const CodeInfo* info = info_for(frame);
        if (info != nullptr && info->is_traced)
            g.emitter->line(*info, static_cast<std::uint32_t>(PyFrame_GetLineNumber(frame)));
        break;
    }
    default:
        break;
    }
    return 0;
}

// Frames of `frame`'s stack, outermost first, as new references.
std::vector<PyFrameObject*> stack_of(PyFrameObject* frame)
{
    std::vector<PyFrameObject*> frames;
    Py_XINCREF(frame);
    for (PyFrameObject* f = frame; f != nullptr; f = PyFrame_GetBack(f))
        frames.push_back(f);
    return {frames.rbegin(), frames.rend()};
}

void release(std::vector<PyFrameObject*>& frames) noexcept
{
    for (PyFrameObject* f : frames)
        Py_DECREF(f);
    frames.clear();
}

// Emits a call for every frame of the stack up to `frame`, outermost first:
// the thread's stack as it stands when pyust starts watching it.
void open_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (PyFrameObject* f : frames) {
            const CodeInfo* info = info_for(f);
            if (info != nullptr && info->is_traced)
                g.emitter->call(*info);
        }
        release(frames);
    } catch (const std::bad_alloc&) {
        // The stack stays unannounced; its returns will show as unmatched.
    }
}

// Emits a return for every frame of the stack from `frame` down to the
// outermost: the thread's stack as it stands when pyust stops watching it.
void close_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
            const CodeInfo* info = info_for(*it);
            if (info != nullptr && info->is_traced)
                g.emitter->ret(*info, false);
        }
        release(frames);
    } catch (const std::bad_alloc&) {
    }
}

// Marks the code of every frame on the stack as never traced: the frames of
// the interpreter's start-up that run pyust's runner are not the program's.
void hide_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (PyFrameObject* f : frames) {
            PyCodeObject* code = PyFrame_GetCode(f);
            auto* info = static_cast<CodeInfo*>(compat::get_code_extra(code, g.extra_index));
            if (info == nullptr) {
                compat::SavedError saved;
                info = &g.registry->add(k_unknown, utf8_or_unknown(compat::code_qualname(code)),
                                        utf8_or_unknown(code->co_filename),
                                        static_cast<std::uint32_t>(code->co_firstlineno), false);
                compat::set_code_extra(code, g.extra_index, info);
            }
            info->is_hidden = true;
            info->is_traced = false;
            Py_DECREF(code);
        }
        release(frames);
    } catch (...) {
    }
}

void install_on_current(bool is_first);

// First event on a thread that was running when tracing started: announce
// its stack, then switch to the steady callbacks and handle the event.
// A new frame (call) is not on the stack yet: the steady callback opens it.
void begin_thread(PyFrameObject* frame, int what) noexcept
{
    PyFrameObject* top = frame;
    if (what == PyTrace_CALL)
        top = PyFrame_GetBack(frame); // new reference or nullptr
    else
        Py_XINCREF(top);
    open_stack(top);
    Py_XDECREF(top);
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

// Last event on a thread after stop(): close its stack and unhook it. A frame
// being called was never opened, so only its callers are closed.
int closing_callback(PyObject*, PyFrameObject* frame, int what, PyObject*) noexcept
{
    PyFrameObject* top = frame;
    if (what == PyTrace_CALL)
        top = PyFrame_GetBack(frame);
    else
        Py_XINCREF(top);
    close_stack(top);
    Py_XDECREF(top);
    PyEval_SetProfile(nullptr, nullptr);
    PyEval_SetTrace(nullptr, nullptr);
    return 0;
}

Py_tracefunc profile_for(bool is_first) noexcept
{
    if (g.options.lines)
        return g.options.c_calls ? profile_callback : nullptr;
    return is_first ? first_profile_callback : profile_callback;
}

Py_tracefunc trace_for(bool is_first) noexcept
{
    if (!g.options.lines)
        return nullptr;
    return is_first ? first_trace_callback : trace_callback;
}

void install_on_current(bool is_first)
{
    PyEval_SetProfile(profile_for(is_first), nullptr);
    PyEval_SetTrace(trace_for(is_first), nullptr);
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

// Another tool (cProfile, a debugger, coverage.py) holds the interpreter's
// hook pyust needs: say which, rather than silently displacing it.
void check_hook_is_free()
{
    PyThreadState* self = PyThreadState_Get();
    if (self->c_profilefunc != nullptr && !is_ours(self->c_profilefunc))
        throw TracerError("Cannot start tracing: another profiler is active on this thread "
                          "(sys.getprofile() is set, e.g. by cProfile); stop it first");
    if (g.options.lines && self->c_tracefunc != nullptr && !is_ours(self->c_tracefunc))
        throw TracerError("Cannot start line tracing: another tracer is active on this thread "
                          "(sys.gettrace() is set, e.g. by a debugger or coverage.py); stop "
                          "it first or trace without lines");
}

// "3.11.7" out of Py_GetVersion()'s "3.11.7 (main, ...) [GCC ...]".
const char* python_version() noexcept
{
    static const std::string version = [] {
        std::string full = Py_GetVersion();
        return full.substr(0, full.find(' '));
    }();
    return version.c_str();
}

void emit_process() noexcept
{
    g.emitter->process(python_version(), "setprofile", g.options.lines, g.options.c_calls);
}

std::int64_t current_tid() noexcept
{
    return static_cast<std::int64_t>(PyThread_get_thread_native_id());
}

// pthread_atfork handlers: they run inside fork() itself, after Python's own
// before-fork hooks, which is where liblttng-ust-fork.so would act too.
void fork_prepare() noexcept
{
    g.forking_tid = current_tid();
    lttng_ust_before_fork(&g.fork_sigset);
}

void fork_parent() noexcept
{
    lttng_ust_after_fork_parent(&g.fork_sigset);
}

// The child re-registers with the session daemon (its events carry its own
// vpid and vtid from here on) and gets an id space of its own. The forking
// thread lives on under a new tid with its old name.
void fork_child() noexcept
{
    lttng_ust_after_fork_child(&g.fork_sigset);
    try {
        std::string name = "MainThread";
        g.registry->for_each_thread([&](std::int64_t tid, const std::string& n) {
            if (tid == g.forking_tid)
                name = n;
        });
        g.registry->after_fork_child(static_cast<std::uint32_t>(getpid()));
        g.registry->set_thread_name(current_tid(), std::move(name));
    } catch (...) {
    }
}

} // namespace

void init(const std::string& own_dir)
{
    if (g.is_initialised)
        return;
    g.extra_index = compat::request_code_extra_index();
    if (g.extra_index < 0) {
        PyErr_Clear();
        throw TracerError("Cannot initialise pyust: the interpreter has no free code-extra "
                          "slot (too many tools store data on code objects)");
    }
    g.own_dir = own_dir;
    g.registry = std::make_unique<Registry>(static_cast<std::uint32_t>(getpid()));
    g.emitter = &lttng_emitter();
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
        throw TracerError("Cannot initialise pyust: pthread_atfork failed");
    g.is_initialised = true;
}

void start(const Options& options)
{
    if (!g.is_initialised)
        throw TracerError("Cannot start tracing: pyust's native hook was not initialised "
                          "(import pyust rather than pyust._native)");
    if (g.is_active)
        throw TracerError("Cannot start tracing: pyust is already tracing; call "
                          "pyust.stop() first");
    prefix::Filter filter;
    try {
        filter = prefix::Filter(options.include, options.exclude);
    } catch (const std::bad_alloc&) {
        throw;
    } catch (const std::exception& error) {
        throw TracerError(std::string("Cannot start tracing: ") + error.what());
    }
    const Options previous = g.options;
    g.options = options;
    try {
        check_hook_is_free();
    } catch (...) {
        g.options = previous;
        throw;
    }
    g.filter = std::move(filter);
    ++g.generation;
    g.is_active = true;
    g.was_code_enabled = g.emitter->is_code_enabled();
    emit_process();

    PyFrameObject* frame = PyEval_GetFrame(); // borrowed
    if (options.hide_caller_stack)
        hide_stack(frame);
    else
        open_stack(frame);
    install_on_current(false);
#if PYUST_HAS_PER_THREAD_SETTERS
    for_each_other_thread([](PyThreadState* t) {
        // A thread still closing from the last stop() has its frames open in
        // the trace already: it resumes without announcing them again.
        const bool is_first = t->c_profilefunc != closing_callback;
        if (compat::set_profile(t, profile_for(is_first)) < 0 ||
            compat::set_trace(t, trace_for(is_first)) < 0)
            PyErr_Clear();
    });
#else
    // 3.12+: until the sys.monitoring back end lands, every other thread gets
    // the first-event callbacks through the all-threads setters, which also
    // reset the caller's: install the caller's steady callbacks after them.
    PyEval_SetProfileAllThreads(profile_for(true), nullptr);
    PyEval_SetTraceAllThreads(trace_for(true), nullptr);
    install_on_current(false);
#endif
}

void stop() noexcept
{
    if (!g.is_active)
        return;
    g.is_active = false;
    PyEval_SetProfile(nullptr, nullptr);
    PyEval_SetTrace(nullptr, nullptr);
    close_stack(PyEval_GetFrame());
#if PYUST_HAS_PER_THREAD_SETTERS
    for_each_other_thread([](PyThreadState* t) {
        const bool is_hooked = t->c_profilefunc != nullptr || t->c_tracefunc != nullptr;
        if (compat::set_trace(t, nullptr) < 0 ||
            compat::set_profile(t, is_hooked ? closing_callback : nullptr) < 0)
            PyErr_Clear();
    });
#else
    PyEval_SetProfileAllThreads(nullptr, nullptr);
    PyEval_SetTraceAllThreads(nullptr, nullptr);
#endif
}

bool is_active() noexcept
{
    return g.is_active;
}

void rundown() noexcept
{
    if (!g.is_initialised)
        return;
    emit_process();
    g.registry->for_each_thread(
        [](std::int64_t tid, const std::string& name) { g.emitter->thread(tid, name.c_str()); });
    g.registry->for_each_code([](const CodeInfo& info) {
        if (info.is_traced)
            g.emitter->code(info);
    });
}

void attach_current_thread(const std::string& name)
{
    if (!g.is_active)
        return;
    name_thread(current_tid(), name);
    install_on_current(true);
}

void name_thread(std::int64_t tid, const std::string& name)
{
    g.registry->set_thread_name(tid, name);
    g.emitter->thread(tid, name.c_str());
}

std::uint64_t emitted_events() noexcept
{
    return g.emitter != nullptr ? g.emitter->emitted() : 0;
}

void after_fork_child() noexcept
{
    if (!g.is_active)
        return;
    // The child's process and thread events. The code ids it inherited keep
    // the parent's pid: their names are in the parent's registrations.
    g.was_code_enabled = g.emitter->is_code_enabled();
    emit_process();
    g.registry->for_each_thread(
        [](std::int64_t tid, const std::string& name) { g.emitter->thread(tid, name.c_str()); });
    // The child's thread continues the parent's stack: announce it, so the
    // child's own stream is balanced.
    open_stack(PyEval_GetFrame());
}

} // namespace pyust::hook
