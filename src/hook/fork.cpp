// The fork protocol (see fork.hpp and hook.hpp): pthread_atfork handlers that
// keep LTTng-UST, the watcher and the registry consistent across fork(), and
// Python's os.fork() hooks that tell a fork Python goes on from (whose child
// is traced as a process of its own) from subprocess's.
#include "hook/fork.hpp"

#include <cstdint>
#include <string>

#include <pthread.h>
#include <unistd.h>

#include <lttng/ust-fork.h>

#include "hook/emitter.hpp"
#include "hook/registration.hpp"
#include "hook/session.hpp"
#include "hook/stacks.hpp"
#include "hook/state.hpp"
#include "hook/tally.hpp"
#include "hook/watcher.hpp"

namespace pyust::hook {

namespace {

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
    void task(std::uint64_t, std::uint64_t, const char*) noexcept override {}
    void task_step(std::uint64_t, std::uint32_t, std::uint8_t, std::uint64_t,
                   std::uint8_t) noexcept override
    {
    }
    void task_end(std::uint64_t, std::uint8_t) noexcept override {}
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
    hold_thread_state_guard();
    s_state.forking_tid = current_tid();
    lttng_ust_before_fork(&s_state.fork_sigset);
}

void fork_parent() noexcept
{
    lttng_ust_after_fork_parent(&s_state.fork_sigset);
    release_thread_state_guard();
}

// The child re-registers with the session daemon (its events carry its own
// vpid and vtid from here on) and gets an id space of its own. The forking
// thread lives on under a new tid with its old name.
void fork_child() noexcept
{
    reset_thread_state_guard();
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
    forget_watcher(); // after_fork_child restarts it
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

} // namespace

bool install_fork_handlers() noexcept
{
    return pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
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
