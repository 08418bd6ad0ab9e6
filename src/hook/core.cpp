// What the hook's back ends share (see core.hpp): code-object registration
// with its cached verdict, stack announcements, rundown, and the fork protocol.
//
// Hot path: a back end looks up the CodeInfo pointer cached on the code object
// (co_extra) and hands it to the Emitter. The first event of a code object
// registers it (allocations happen there, once per code object). Nothing here
// raises into the traced program: any C-API failure is cleared and the event
// is named "?".
#include "core.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <new>
#include <unordered_map>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include <lttng/ust-fork.h>

#include "command_line.hpp"
#include "tally.hpp"

namespace pyust::hook {

State& g = *new State;

namespace {

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
                     !starts_with(info.file, g.options.hidden_dir) &&
                     g.filter.is_traced(info.module);
    if (info.is_traced && !was_traced)
        g.emitter->code(info);
}

std::string module_of(PyFrameObject* frame)
{
    std::string module = k_unknown;
    if (frame == nullptr)
        return module;
    if (PyObject* globals = compat::frame_globals(frame)) {
        if (PyDict_Check(globals))
            module = utf8_or_unknown(PyDict_GetItemString(globals, "__name__")); // borrowed
        Py_DECREF(globals);
    }
    return module;
}

// The module of code that runs without a frame of its own: from Python 3.12 on,
// Cython 3.1's profiled functions report their calls through sys.monitoring,
// and the current frame is then their caller's. Cython records the file as the
// path it compiled ("src/pkg/mod.pyx", from wherever it ran): the module is the
// one of sys.modules whose dotted name ends with the most of that path's parts
// ("pkg.mod"), else the file's stem. Remembered per file once found. Throws
// std::bad_alloc.
std::string module_of_file(const std::string& file)
{
    static std::unordered_map<std::string, std::string> found;
    if (const auto it = found.find(file); it != found.end())
        return it->second;
    // The path's parts without the extension, the innermost first ("mod", "pkg", "src").
    std::string path = file;
    if (const std::size_t dot = path.rfind('.');
        dot != std::string::npos && path.find('/', dot) == std::string::npos)
        path.erase(dot);
    std::vector<std::string> parts;
    for (std::size_t end = path.size(); end > 0;) {
        const std::size_t slash = path.rfind('/', end - 1);
        const std::size_t begin = slash == std::string::npos ? 0 : slash + 1;
        if (end > begin)
            parts.push_back(path.substr(begin, end - begin));
        end = slash == std::string::npos ? 0 : slash;
    }
    if (!parts.empty() && parts.front() == "__init__")
        parts.erase(parts.begin());
    if (parts.empty() || parts.front()[0] == '<')
        return k_unknown;
    std::string best = parts.front();
    std::size_t best_shared = 0;
    PyObject* modules = PySys_GetObject("modules"); // borrowed
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t position = 0;
    while (modules != nullptr && PyDict_Check(modules) &&
           PyDict_Next(modules, &position, &key, &value)) {
        const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
        if (name == nullptr) {
            PyErr_Clear();
            continue;
        }
        // How many of the path's innermost parts the name ends with, part for part.
        const std::string_view dotted(name);
        std::size_t shared = 0;
        std::size_t end = dotted.size();
        while (shared < parts.size() && end > 0) {
            const std::size_t dot = dotted.rfind('.', end - 1);
            const std::size_t begin = dot == std::string_view::npos ? 0 : dot + 1;
            if (dotted.substr(begin, end - begin) != parts[shared])
                break;
            ++shared;
            end = dot == std::string_view::npos ? 0 : dot;
        }
        if (shared > best_shared && (end == 0 || shared == parts.size())) {
            best_shared = shared;
            best = name;
        }
    }
    if (best_shared > 0)
        found.emplace(file, best);
    return best;
}

// Registers a code object: assigns its id, decides whether it is traced,
// emits python:code. nullptr only when memory runs out.
CodeInfo* register_code(PyCodeObject* code, PyFrameObject* frame) noexcept
{
    compat::SavedError saved;
    try {
        std::string file = utf8_or_unknown(code->co_filename);
        std::string module;
        if (frame == nullptr)
            frame = PyEval_GetFrame(); // borrowed
        PyCodeObject* frame_code = frame != nullptr ? PyFrame_GetCode(frame) : nullptr;
        Py_XDECREF(frame_code); // only compared
        if (frame_code != nullptr && frame_code != code)
            module = module_of_file(file); // not the frame of this code (see module_of_file)
        else
            module = module_of(frame);
        CodeInfo& info =
            g.registry->add(std::move(module), utf8_or_unknown(compat::code_qualname(code)),
                            std::move(file), static_cast<std::uint32_t>(code->co_firstlineno),
                            false, utf8_or_unknown(code->co_name));
        decide(info);
        compat::set_code_extra(code, g.extra_index, &info);
        return &info;
    } catch (...) {
        return nullptr;
    }
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

// ------------------------------------------------------------ dormant hooks
//
// With no session recording python:*, the interpreter hooks are removed: the
// program runs at untraced speed. A native thread polls LTTng's enabled flags
// (no GIL needed) every k_watch_period_ms and, when they change, takes the GIL
// to put the hooks back (every thread then announces its stack at its next
// event, and a rundown names everything) or to remove them. pthreads rather
// than std::thread: the child of a fork() must be able to forget the thread.
//
// In the fast mode the same thread also writes every thread's batch every
// k_flush_period_ms, with the GIL, followed by a python:horizon: a thread
// blocked outside Python still gets its records into the trace, and a reader
// knows how long to wait for them.
//
// On CPython 3.11 it also takes the GIL every k_watch_period_ms while the hooks
// are in, and does nothing with it: the hand-over ends the spin of a traced
// thread stuck at a RESUME by a signal only the main thread may handle (see
// compat::k_traced_threads_spin_on_signals), which would otherwise hang the
// program. The watcher then runs whatever the options (dormancy off too).

constexpr long k_watch_period_ms = 50;
constexpr long k_flush_period_ms = 20;

struct Watcher {
    pthread_t thread{};
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
    bool is_running = false;            // guarded by mutex
    bool is_stopping = false;           // guarded by mutex
    std::atomic<bool> is_hooked{false}; // mirrors g.is_hooked, read without the GIL
    // Set by start() before the watcher starts (read without the GIL).
    std::atomic<bool> is_dormant_allowed{true};
    std::atomic<bool> is_batched{false};
};

Watcher& w = *new Watcher; // never destroyed, like g

void set_hooked(bool is_hooked) noexcept
{
    g.is_hooked = is_hooked;
    w.is_hooked.store(is_hooked);
}

// A session started recording: hooks back on, everything named again.
void wake_up() noexcept
{
    ++g.generation;
    g.emitter->begin();
    try {
        backend::install(false);
        set_hooked(true);
    } catch (const std::exception& error) {
        PyErr_Clear();
        static bool has_warned = false;
        if (!has_warned)
            std::fprintf(stderr, "pyust: warning: %s\n", error.what());
        has_warned = true;
        return;
    }
    g.was_code_enabled = g.emitter->is_code_enabled();
    rundown();
}

// The last session stopped recording: hooks off.
void go_dormant() noexcept
{
    backend::uninstall(false);
    set_hooked(false);
}

timespec deadline_after(long ms) noexcept
{
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

void* watch(void*) noexcept
{
    pthread_mutex_lock(&w.mutex);
    while (!w.is_stopping) {
        const bool is_batched = w.is_batched.load();
        const timespec deadline =
            deadline_after(is_batched ? k_flush_period_ms : k_watch_period_ms);
        while (!w.is_stopping &&
               pthread_cond_timedwait(&w.wake, &w.mutex, &deadline) != ETIMEDOUT) {
        }
        if (w.is_stopping)
            break;
        const bool is_recording = g.emitter->is_recording();
        const bool is_hooked = w.is_hooked.load();
        const bool is_toggling = w.is_dormant_allowed.load() && is_recording != is_hooked;
        const bool is_flushing = is_batched && is_recording && is_hooked;
        const bool is_unsticking = compat::k_traced_threads_spin_on_signals && is_hooked;
        if (!is_toggling && !is_flushing && !is_unsticking)
            continue;
        pthread_mutex_unlock(&w.mutex);
        if (compat::is_finalizing()) {
            pthread_mutex_lock(&w.mutex);
            break;
        }
        const PyGILState_STATE gil = PyGILState_Ensure();
        // stop() clears is_active under the GIL before it waits for us.
        if (g.is_active && is_toggling && is_recording != g.is_hooked) {
            if (is_recording)
                wake_up();
            else
                go_dormant();
        }
        if (g.is_active && is_flushing && g.is_hooked)
            g.emitter->flush_all(false);
        // Unsticking needs nothing more: taking the GIL was the work.
        PyGILState_Release(gil);
        pthread_mutex_lock(&w.mutex);
    }
    w.is_running = false;
    pthread_mutex_unlock(&w.mutex);
    return nullptr;
}

// Whether tracing with these options needs the watcher even while the hooks are in.
bool needs_watcher(const Options& options) noexcept
{
    return options.is_dormant_allowed || options.fast || compat::k_traced_threads_spin_on_signals;
}

// Starts the watcher unless it runs. false when no thread could be made.
bool start_watcher() noexcept
{
    pthread_mutex_lock(&w.mutex);
    bool is_ok = true;
    if (!w.is_running) {
        w.is_stopping = false;
        // The watcher blocks every signal (it inherits the mask it is created
        // with): a Ctrl-C must reach the program's own threads, whose sleep it
        // interrupts, not this one.
        sigset_t all;
        sigset_t previous;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &previous);
        is_ok = pthread_create(&w.thread, nullptr, watch, nullptr) == 0;
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        w.is_running = is_ok;
    }
    pthread_mutex_unlock(&w.mutex);
    return is_ok;
}

// pthread_atfork handlers: they run inside fork() itself, after Python's own
// before-fork hooks, which is where liblttng-ust-fork.so would act too (see
// hook.hpp for what the child does).
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
    const bool is_os_fork = g.os_fork_tid != 0 && g.os_fork_tid == g.forking_tid;
    g.os_fork_tid = 0;
    if (!is_os_fork) {
        // About to exec (subprocess): LTTng-UST's locks may stay taken, its signal mask not.
        pthread_sigmask(SIG_SETMASK, &g.fork_sigset, nullptr);
        return;
    }
    lttng_ust_after_fork_child(&g.fork_sigset);
    tally_after_fork_child();
    // The watcher thread does not exist in the child, and its lock may have
    // been held at the fork: start afresh (after_fork_child restarts it).
    new (&w.mutex) pthread_mutex_t(PTHREAD_MUTEX_INITIALIZER);
    new (&w.wake) pthread_cond_t(PTHREAD_COND_INITIALIZER);
    w.is_running = false;
    w.is_stopping = false;
    try {
        std::string name = "MainThread";
        g.registry->for_each_thread([&](std::int64_t tid, const std::string& n) {
            if (tid == g.forking_tid)
                name = n;
        });
        g.registry->after_fork_child(static_cast<std::uint32_t>(getpid()));
        if (g.has_batched)
            batch_emitter().after_fork_child(static_cast<std::uint32_t>(getpid()));
        g.registry->set_thread_name(current_tid(), std::move(name));
    } catch (...) {
    }
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

// The words of sys.orig_argv (in the file system's encoding, as the kernel had
// them), or /proc/self/cmdline's where sys has none (3.8, 3.9). Throws
// std::bad_alloc.
std::vector<std::string> own_command()
{
    std::vector<std::string> words;
    PyObject* argv = PySys_GetObject("orig_argv"); // borrowed
    if (argv == nullptr || !PyList_Check(argv))
        return read_own_cmdline();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(argv); ++i) {
        PyObject* word = PyList_GET_ITEM(argv, i);
        PyObject* bytes = PyUnicode_Check(word) ? PyUnicode_EncodeFSDefault(word) : nullptr;
        if (bytes == nullptr) {
            PyErr_Clear();
            words.emplace_back("?");
            continue;
        }
        words.emplace_back(PyBytes_AS_STRING(bytes),
                           static_cast<std::size_t>(PyBytes_GET_SIZE(bytes)));
        Py_DECREF(bytes);
    }
    return words;
}

} // namespace

CodeInfo* info_for_code(PyCodeObject* code, PyFrameObject* frame) noexcept
{
    auto* info = static_cast<CodeInfo*>(compat::get_code_extra(code, g.extra_index));
    if (info == nullptr)
        return register_code(code, frame);
    if (info->generation != g.generation)
        decide(*info);
    return info;
}

CodeInfo* info_for_frame(PyFrameObject* frame) noexcept
{
    PyCodeObject* code = PyFrame_GetCode(frame);
    CodeInfo* info = info_for_code(code, frame);
    Py_DECREF(code);
    return info;
}

void check_session() noexcept
{
    const bool is_enabled = g.emitter->is_code_enabled();
    if (is_enabled != g.was_code_enabled) {
        g.was_code_enabled = is_enabled;
        if (is_enabled) {
            g.emitter->begin();
            rundown();
        }
    }
}

void open_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (PyFrameObject* f : frames) {
            const CodeInfo* info = info_for_frame(f);
            if (is_traced(info))
                g.emitter->call(*info);
        }
        release(frames);
    } catch (const std::bad_alloc&) {
        // The stack stays unannounced; its returns will show as unmatched.
    }
}

void close_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
            const CodeInfo* info = info_for_frame(*it);
            if (is_traced(info))
                g.emitter->ret(*info, false);
        }
        release(frames);
    } catch (const std::bad_alloc&) {
    }
}

void switch_stacks(PyFrameObject* origin, PyFrameObject* target) noexcept
{
    if (!g.is_active || !g.is_hooked)
        return;
    if (origin != nullptr) {
        if (g.options.c_calls && is_traced(info_for_frame(origin)))
            g.emitter->c_return(false);
        close_stack(origin);
    }
    if (target != nullptr) {
        open_stack(target);
        if (g.options.c_calls && is_traced(info_for_frame(target)))
            g.emitter->c_call("switch", "greenlet.greenlet");
    }
}

void hide_code(PyCodeObject* code) noexcept
{
    try {
        auto* info = static_cast<CodeInfo*>(compat::get_code_extra(code, g.extra_index));
        if (info == nullptr) {
            compat::SavedError saved;
            info = &g.registry->add(k_unknown, utf8_or_unknown(compat::code_qualname(code)),
                                    utf8_or_unknown(code->co_filename),
                                    static_cast<std::uint32_t>(code->co_firstlineno), false,
                                    utf8_or_unknown(code->co_name));
            compat::set_code_extra(code, g.extra_index, info);
        }
        info->is_hidden = true;
        info->is_traced = false;
    } catch (...) {
    }
}

void hide_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (PyFrameObject* f : frames) {
            PyCodeObject* code = PyFrame_GetCode(f);
            hide_code(code);
            Py_DECREF(code);
        }
        release(frames);
    } catch (...) {
    }
}

PyFrameObject* open_part(PyFrameObject* frame, bool skip_top) noexcept
{
    if (frame == nullptr)
        return nullptr;
    if (skip_top)
        return PyFrame_GetBack(frame);
    Py_INCREF(frame);
    return frame;
}

void c_function_names(PyObject* callable, const char** name, const char** owner) noexcept
{
    *owner = "";
    if (PyCFunction_Check(callable)) {
        auto* function = reinterpret_cast<PyCFunctionObject*>(callable);
        *name = function->m_ml->ml_name;
        if (function->m_module != nullptr && PyUnicode_Check(function->m_module))
            *owner = utf8_or_unknown(function->m_module);
        else if (function->m_self != nullptr && !PyModule_Check(function->m_self))
            *owner = Py_TYPE(function->m_self)->tp_name;
    } else if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
        auto* descr = reinterpret_cast<PyMethodDescrObject*>(callable);
        *name = descr->d_method->ml_name;
        *owner = PyDescr_TYPE(descr)->tp_name;
    } else if (PyType_Check(callable)) {
        *name = reinterpret_cast<PyTypeObject*>(callable)->tp_name;
        *owner = "type";
    } else {
        *name = Py_TYPE(callable)->tp_name;
    }
}

void emit_process() noexcept
{
    g.emitter->process(python_version(), backend::name(), g.options.lines, g.options.c_calls,
                       g.command.c_str());
}

std::int64_t current_tid() noexcept
{
    return static_cast<std::int64_t>(PyThread_get_thread_native_id());
}

// --------------------------------------------------------------- public API

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
        backend::check_free();
    } catch (...) {
        g.options = previous;
        throw;
    }
    g.filter = std::move(filter);
    ++g.generation;
    // This start may record into another session than the last one did (pyust
    // attach, start/stop/start): every code object is registered in the trace
    // again when it next runs, as if new (decide() emits python:code when code
    // becomes traced).
    g.registry->for_each_code([](CodeInfo& info) { info.is_traced = false; });
    g.emitter = options.fast ? &batch_emitter() : &lttng_emitter();
    g.has_batched = g.has_batched || options.fast;
    g.was_code_enabled = g.emitter->is_code_enabled();
    g.command = join_command(options.command.empty() ? own_command() : options.command);
    g.emitter->begin();
    emit_process();

    PyFrameObject* frame = PyEval_GetFrame(); // borrowed
    if (options.hide_caller_stack)
        hide_stack(frame);
    else
        open_stack(frame);
    // Dormant from the start when no session records (the stack announced
    // above then went nowhere; the hooks announce it again when they wake).
    w.is_dormant_allowed.store(options.is_dormant_allowed);
    w.is_batched.store(options.fast);
    const bool is_dormant =
        options.is_dormant_allowed && !g.emitter->is_recording() && start_watcher();
    if (!is_dormant) {
        try {
            backend::install(true);
        } catch (...) {
            close_stack(frame);
            throw;
        }
        set_hooked(true);
        if (needs_watcher(options))
            start_watcher();
    }
    g.is_active = true;
}

void stop() noexcept
{
    if (!g.is_active)
        return;
    g.is_active = false;
    stop_watcher();
    if (g.is_hooked) {
        backend::uninstall(true);
        set_hooked(false);
        close_stack(PyEval_GetFrame());
    }
    g.emitter->flush_all(true);
}

bool is_active() noexcept
{
    return g.is_active;
}

bool is_hooked() noexcept
{
    return g.is_hooked;
}

void stop_watcher() noexcept
{
    pthread_mutex_lock(&w.mutex);
    const bool is_running = w.is_running;
    w.is_stopping = true;
    pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.mutex);
    if (!is_running)
        return;
    // The watcher may be waiting for the GIL: let it have it.
    Py_BEGIN_ALLOW_THREADS
        pthread_join(w.thread, nullptr);
    Py_END_ALLOW_THREADS
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
    if (g.is_hooked)
        backend::attach_current_thread();
}

void name_thread(std::int64_t tid, const std::string& name)
{
    g.registry->set_thread_name(tid, name);
    g.emitter->thread(tid, name.c_str());
}

std::uint64_t emitted_events() noexcept
{
    if (!g.is_initialised)
        return 0;
    return tally().events + tally().records.load(std::memory_order_relaxed);
}

void flush(bool is_final) noexcept
{
    if (g.is_initialised)
        g.emitter->flush_all(is_final);
}

void before_os_fork() noexcept
{
    g.os_fork_tid = current_tid();
}

void after_os_fork_parent() noexcept
{
    g.os_fork_tid = 0;
}

void after_fork_child() noexcept
{
    if (!g.is_active)
        return;
    // The child's process and thread events. The code ids it inherited keep
    // the parent's pid: their names are in the parent's registrations.
    g.was_code_enabled = g.emitter->is_code_enabled();
    g.emitter->begin();
    emit_process();
    g.registry->for_each_thread(
        [](std::int64_t tid, const std::string& name) { g.emitter->thread(tid, name.c_str()); });
    // The child's thread continues the parent's stack: announce it, so the
    // child's own stream is balanced.
    open_stack(PyEval_GetFrame());
    if (needs_watcher(g.options))
        start_watcher();
}

} // namespace pyust::hook
