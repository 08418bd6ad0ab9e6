// The session watcher and dormant hooks (see watcher.hpp).
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
#include "hook/watcher.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <exception>
#include <new>

#include <pthread.h>

#include "hook/backend.hpp"
#include "hook/session.hpp"
#include "hook/state.hpp"

namespace pyust::hook {

namespace {

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

} // namespace

void set_hooked(bool is_hooked) noexcept
{
    s_state.is_hooked = is_hooked;
    s_watcher.is_hooked.store(is_hooked);
}

void set_watcher_options(const Options& options) noexcept
{
    s_watcher.is_dormant_allowed.store(options.is_dormant_allowed);
    s_watcher.is_batched.store(options.fast);
}

bool needs_watcher(const Options& options) noexcept
{
    return options.is_dormant_allowed || options.fast || compat::k_traced_threads_spin_on_signals;
}

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

void hold_thread_state_guard() noexcept
{
    if (compat::k_fork_child_needs_head_lock)
        pthread_mutex_lock(&s_thread_state_guard);
}

void release_thread_state_guard() noexcept
{
    if (compat::k_fork_child_needs_head_lock)
        pthread_mutex_unlock(&s_thread_state_guard);
}

void reset_thread_state_guard() noexcept
{
    new (&s_thread_state_guard) pthread_mutex_t(PTHREAD_MUTEX_INITIALIZER);
}

void forget_watcher() noexcept
{
    // The watcher thread does not exist in the child, and its lock may have
    // been held at the fork: start afresh.
    new (&s_watcher.mutex) pthread_mutex_t(PTHREAD_MUTEX_INITIALIZER);
    new (&s_watcher.wake) pthread_cond_t(PTHREAD_COND_INITIALIZER);
    s_watcher.is_running = false;
    s_watcher.is_stopping = false;
}

} // namespace pyust::hook
