// What the hook's back ends share (see core.hpp): stack announcements, rundown,
// and the fork protocol; and the public API (hook.hpp).
#include "core.hpp"

#include <algorithm>
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

State& s_state = *new State;

namespace {

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
    std::atomic<bool> is_hooked{false}; // mirrors s_state.is_hooked, read without the GIL
    // Set by start() before the watcher starts (read without the GIL).
    std::atomic<bool> is_dormant_allowed{true};
    std::atomic<bool> is_batched{false};
};

Watcher& s_watcher = *new Watcher; // never destroyed, like s_state

// Held while the watcher makes its thread state (which takes CPython's runtime lock,
// HEAD_LOCK, without the GIL) and across every fork(), from fork_prepare to fork_parent or
// fork_child: the child of a fork() made while the watcher held HEAD_LOCK would block for
// ever in PyOS_AfterFork_Child (compat::k_fork_child_needs_head_lock). Up to 3.11 only:
// later versions reinitialise the lock first, and those that take it in PyOS_BeforeFork
// would take it and this guard in both orders.
pthread_mutex_t s_thread_state_guard = PTHREAD_MUTEX_INITIALIZER;

// The watcher takes the GIL with a thread state of its own, made under the guard (not
// PyGILState_Ensure, which makes it and then waits for the GIL in one call). nullptr when
// no memory was left.
PyThreadState* take_gil_as_watcher() noexcept
{
    if (compat::k_fork_child_needs_head_lock)
        pthread_mutex_lock(&s_thread_state_guard);
    PyThreadState* tstate = PyThreadState_New(PyInterpreterState_Main());
    if (compat::k_fork_child_needs_head_lock)
        pthread_mutex_unlock(&s_thread_state_guard);
    if (tstate != nullptr)
        PyEval_RestoreThread(tstate);
    return tstate;
}

// Gives the GIL back and deletes the thread state take_gil_as_watcher() made (its lock
// taken with the GIL held).
void release_gil_as_watcher(PyThreadState* tstate) noexcept
{
    PyThreadState_Clear(tstate);
    PyThreadState_DeleteCurrent();
}

void set_hooked(bool is_hooked) noexcept
{
    s_state.is_hooked = is_hooked;
    s_watcher.is_hooked.store(is_hooked);
}

// A session started recording: hooks back on, everything named again.
void wake_up() noexcept
{
    ++s_state.generation;
    s_state.emitter->begin();
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
    s_state.was_code_enabled = s_state.emitter->is_code_enabled();
    rundown();
    end_lost_start();
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
    pthread_mutex_lock(&s_watcher.mutex);
    while (!s_watcher.is_stopping) {
        const bool is_batched = s_watcher.is_batched.load();
        const timespec deadline =
            deadline_after(is_batched ? k_flush_period_ms : k_watch_period_ms);
        while (!s_watcher.is_stopping &&
               pthread_cond_timedwait(&s_watcher.wake, &s_watcher.mutex, &deadline) != ETIMEDOUT) {
        }
        if (s_watcher.is_stopping)
            break;
        const bool is_recording = s_state.emitter->is_recording();
        const bool is_hooked = s_watcher.is_hooked.load();
        const bool is_toggling = s_watcher.is_dormant_allowed.load() && is_recording != is_hooked;
        const bool is_flushing = is_batched && is_recording && is_hooked;
        const bool is_unsticking = compat::k_traced_threads_spin_on_signals && is_hooked;
        if (!is_toggling && !is_flushing && !is_unsticking)
            continue;
        pthread_mutex_unlock(&s_watcher.mutex);
        if (compat::is_finalizing()) {
            pthread_mutex_lock(&s_watcher.mutex);
            break;
        }
        if (is_toggling && is_recording)
            wait_for_session_activation();
        PyThreadState* const tstate = take_gil_as_watcher();
        if (tstate == nullptr) {
            pthread_mutex_lock(&s_watcher.mutex);
            continue;
        }
        // stop() clears is_active under the GIL before it waits for us.
        if (s_state.is_active && is_toggling && is_recording != s_state.is_hooked) {
            if (is_recording)
                wake_up();
            else
                go_dormant();
        }
        if (s_state.is_active && is_flushing && s_state.is_hooked)
            s_state.emitter->flush_all(false);
        // Unsticking needs nothing more: taking the GIL was the work.
        release_gil_as_watcher(tstate);
        pthread_mutex_lock(&s_watcher.mutex);
    }
    s_watcher.is_running = false;
    pthread_mutex_unlock(&s_watcher.mutex);
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
    pthread_mutex_lock(&s_watcher.mutex);
    bool is_ok = true;
    if (!s_watcher.is_running) {
        s_watcher.is_stopping = false;
        // The watcher blocks every signal (it inherits the mask it is created
        // with): a Ctrl-C must reach the program's own threads, whose sleep it
        // interrupts, not this one.
        sigset_t all;
        sigset_t previous;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &previous);
        is_ok = pthread_create(&s_watcher.thread, nullptr, watch, nullptr) == 0;
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        s_watcher.is_running = is_ok;
    }
    pthread_mutex_unlock(&s_watcher.mutex);
    return is_ok;
}

// The emitter of a child of subprocess's fork with a preexec_fn (see fork_child): its events
// go nowhere.
class SilentEmitter final : public Emitter {
public:
    SilentEmitter() noexcept : Emitter(&k_off, nullptr) {}
    void code(const CodeInfo&) noexcept override {}
    void call(const CodeInfo&) noexcept override {}
    void ret(const CodeInfo&, bool) noexcept override {}
    void line(const CodeInfo&, std::uint32_t) noexcept override {}
    void c_call(const char*, const char*) noexcept override {}
    void c_return(bool) noexcept override {}
    void thread(std::int64_t, const char*) noexcept override {}
    void lost_start(std::uint64_t, std::uint64_t) noexcept override {}
    void process(const char*, const char*, bool, bool, const char*) noexcept override {}
    bool is_recording() const noexcept override { return false; }

private:
    static constexpr int k_off = 0;
};

SilentEmitter s_silent_emitter; // made at load time: nothing may be constructed in a child

// Whether the thread forking runs subprocess.Popen._execute_child: subprocess forks through
// Python's fork hooks when it has a preexec_fn to call in the child (else it forks, or
// vforks, without them), and the child execs once preexec_fn returns.
bool is_subprocess_fork() noexcept
{
    PyFrameObject* frame = PyEval_GetFrame(); // borrowed
    if (frame == nullptr)
        return false;
    PyCodeObject* code = PyFrame_GetCode(frame);
    const bool is_execute_child =
        PyUnicode_CompareWithASCIIString(code->co_name, "_execute_child") == 0;
    Py_DECREF(code);
    try {
        return is_execute_child && module_of(frame) == "subprocess";
    } catch (...) {
        return false;
    }
}

// pthread_atfork handlers: they run inside fork() itself, after Python's own
// before-fork hooks, which is where liblttng-ust-fork.so would act too (see
// hook.hpp for what the child does).
void fork_prepare() noexcept
{
    if (compat::k_fork_child_needs_head_lock)
        pthread_mutex_lock(&s_thread_state_guard);
    s_state.forking_tid = current_tid();
    lttng_ust_before_fork(&s_state.fork_sigset);
}

void fork_parent() noexcept
{
    lttng_ust_after_fork_parent(&s_state.fork_sigset);
    if (compat::k_fork_child_needs_head_lock)
        pthread_mutex_unlock(&s_thread_state_guard);
}

// The child re-registers with the session daemon (its events carry its own
// vpid and vtid from here on) and gets an id space of its own. The forking
// thread lives on under a new tid with its old name.
void fork_child() noexcept
{
    new (&s_thread_state_guard) pthread_mutex_t(PTHREAD_MUTEX_INITIALIZER);
    const bool is_os_fork = s_state.os_fork_tid != 0 && s_state.os_fork_tid == s_state.forking_tid;
    s_state.os_fork_tid = 0;
    if (!is_os_fork || s_state.is_subprocess_fork) {
        // About to exec (subprocess): LTTng-UST's locks may stay taken, its signal mask not.
        // Restarting it would cost a round trip to the session daemon (3 s when the daemon
        // does not answer) for the few calls of a preexec_fn, and leave the frames announced
        // here open under the program exec'd: the hook stays, with nothing reaching LTTng-UST.
        pthread_sigmask(SIG_SETMASK, &s_state.fork_sigset, nullptr);
        if (is_os_fork)
            s_state.emitter = &s_silent_emitter;
        return;
    }
    lttng_ust_after_fork_child(&s_state.fork_sigset);
    tally_after_fork_child();
    // The watcher thread does not exist in the child, and its lock may have
    // been held at the fork: start afresh (after_fork_child restarts it).
    new (&s_watcher.mutex) pthread_mutex_t(PTHREAD_MUTEX_INITIALIZER);
    new (&s_watcher.wake) pthread_cond_t(PTHREAD_COND_INITIALIZER);
    s_watcher.is_running = false;
    s_watcher.is_stopping = false;
    try {
        std::string name = "MainThread";
        s_state.registry->for_each_thread([&](std::int64_t tid, const std::string& n) {
            if (tid == s_state.forking_tid)
                name = n;
        });
        s_state.registry->after_fork_child(static_cast<std::uint32_t>(getpid()));
        if (s_state.has_batched)
            batch_emitter().after_fork_child(static_cast<std::uint32_t>(getpid()));
        s_state.registry->set_thread_name(current_tid(), std::move(name));
    } catch (...) {
    }
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

// --------------------------------------------------------------- public API

void init(const std::string& own_dir)
{
    if (s_state.is_initialised)
        return;
    s_state.extra_index = compat::request_code_extra_index();
    if (s_state.extra_index < 0) {
        PyErr_Clear();
        throw TracerError("Cannot initialise pyust: the interpreter has no free code-extra "
                          "slot (too many tools store data on code objects)");
    }
    s_state.own_dir = own_dir;
    s_state.registry = std::make_unique<Registry>(static_cast<std::uint32_t>(getpid()));
    s_state.emitter = &lttng_emitter();
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
        throw TracerError("Cannot initialise pyust: pthread_atfork failed");
    s_state.is_initialised = true;
}

void start(const Options& options)
{
    if (!s_state.is_initialised)
        throw TracerError("Cannot start tracing: pyust's native hook was not initialised "
                          "(import pyust rather than pyust._native)");
    if (s_state.is_active)
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
    const Options previous = s_state.options;
    s_state.options = options;
    try {
        backend::check_free();
    } catch (...) {
        s_state.options = previous;
        throw;
    }
    // Before the first event (python:process, the stack, the fast mode's horizon): the
    // program's first line must not run before the session records it.
    wait_for_session(options.fast ? batch_emitter() : lttng_emitter());
    s_state.filter = std::move(filter);
    ++s_state.generation;
    // This start may record into another session than the last one did (pyust
    // attach, start/stop/start): every code object is registered in the trace
    // again when it next runs, as if new (decide() emits python:code when code
    // becomes traced).
    s_state.registry->for_each_code([](CodeInfo& info) { info.is_traced = false; });
    s_state.emitter = options.fast ? &batch_emitter() : &lttng_emitter();
    s_state.has_batched = s_state.has_batched || options.fast;
    s_state.was_code_enabled = s_state.emitter->is_code_enabled();
    s_state.command = join_command(options.command.empty() ? own_command() : options.command);
    s_state.emitter->begin();
    emit_process();

    PyFrameObject* frame = PyEval_GetFrame(); // borrowed
    if (options.hide_caller_stack)
        hide_stack(frame);
    else
        open_stack(frame);
    // Dormant from the start when no session records (the stack announced
    // above then went nowhere; the hooks announce it again when they wake).
    s_watcher.is_dormant_allowed.store(options.is_dormant_allowed);
    s_watcher.is_batched.store(options.fast);
    const bool is_dormant =
        options.is_dormant_allowed && !s_state.emitter->is_recording() && start_watcher();
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
    s_state.is_active = true;
    // The session came between the wait's end and now: nothing of the program ran yet.
    if (s_state.is_hooked && s_state.was_code_enabled)
        end_lost_start();
}

void stop() noexcept
{
    if (!s_state.is_active)
        return;
    s_state.is_active = false;
    stop_watcher();
    if (s_state.is_hooked) {
        backend::uninstall(true);
        set_hooked(false);
        close_stack(PyEval_GetFrame());
    }
    s_state.emitter->flush_all(true);
}

bool is_active() noexcept
{
    return s_state.is_active;
}

bool is_hooked() noexcept
{
    return s_state.is_hooked;
}

void stop_watcher() noexcept
{
    pthread_mutex_lock(&s_watcher.mutex);
    const bool is_running = s_watcher.is_running;
    s_watcher.is_stopping = true;
    pthread_cond_signal(&s_watcher.wake);
    pthread_mutex_unlock(&s_watcher.mutex);
    if (!is_running)
        return;
    // The watcher may be waiting for the GIL: let it have it.
    Py_BEGIN_ALLOW_THREADS
        pthread_join(s_watcher.thread, nullptr);
    Py_END_ALLOW_THREADS
}

void attach_current_thread(const std::string& name)
{
    if (!s_state.is_active)
        return;
    name_thread(current_tid(), name);
    if (s_state.is_hooked)
        backend::attach_current_thread();
}

void name_thread(std::int64_t tid, const std::string& name)
{
    s_state.registry->set_thread_name(tid, name);
    s_state.emitter->thread(tid, name.c_str());
}

std::uint64_t emitted_events() noexcept
{
    if (!s_state.is_initialised)
        return 0;
    return tally().events + tally().records.load(std::memory_order_relaxed);
}

void flush(bool is_final) noexcept
{
    if (s_state.is_initialised)
        s_state.emitter->flush_all(is_final);
}

void before_exec() noexcept
{
    if (!s_state.is_active)
        return;
    if (s_state.is_hooked)
        close_stack(PyEval_GetFrame());
    flush(false);
}

void after_failed_exec() noexcept
{
    if (s_state.is_active && s_state.is_hooked)
        open_stack(PyEval_GetFrame());
}

void before_os_fork() noexcept
{
    s_state.os_fork_tid = current_tid();
    s_state.is_subprocess_fork = s_state.is_active && is_subprocess_fork();
}

void after_os_fork_parent() noexcept
{
    s_state.os_fork_tid = 0;
    s_state.is_subprocess_fork = false;
}

void after_fork_child() noexcept
{
    if (!s_state.is_active || s_state.emitter == &s_silent_emitter)
        return;
    // The child registered with the session daemon again (fork_child): wait for the
    // session, as start() did.
    wait_for_session(*s_state.emitter);
    // The child's process and thread events. The code ids it inherited keep
    // the parent's pid: their names are in the parent's registrations.
    s_state.was_code_enabled = s_state.emitter->is_code_enabled();
    s_state.emitter->begin();
    emit_process();
    s_state.registry->for_each_thread([](std::int64_t tid, const std::string& name) {
        s_state.emitter->thread(tid, name.c_str());
    });
    // The child's thread continues the parent's stack: announce it, so the
    // child's own stream is balanced.
    open_stack(PyEval_GetFrame());
    if (needs_watcher(s_state.options))
        start_watcher();
    if (s_state.is_hooked && s_state.was_code_enabled)
        end_lost_start();
}

} // namespace pyust::hook
