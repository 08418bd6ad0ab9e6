// How the hook follows the sessions (see session.hpp): the wait for a session
// before the first event, the notice of one that starts recording later, and
// the python:lost_start that says how long the process ran unrecorded.
#include "hook/session.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>

#include <lttng/ust-fork.h>

#include "hook/state.hpp"
#include "hook/tally.hpp"

namespace pyust::hook {

namespace {

std::uint64_t monotonic_ns() noexcept
{
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u +
           static_cast<std::uint64_t>(t.tv_nsec);
}

// Waits, with the GIL released, until a session records the events of emitter's mode and is
// active (wait_for_session_activation), at most ms milliseconds: LTTng-UST's registration
// with the session daemon brings it, at once or later (see Options::start_wait_ms). Polls
// LTTng's enabled flags, every 0.1 ms at first, then up to every 2 ms: start-up only.
// Returns 0 when the session records, else the time waited in ns (at least 1).
std::uint64_t wait_for_recording(const Emitter& emitter, long ms) noexcept
{
    const std::uint64_t begin = monotonic_ns();
    const std::uint64_t deadline = begin + static_cast<std::uint64_t>(ms) * 1000000u;
    bool is_recording = emitter.is_recording();
    if (is_recording) {
        wait_for_session_activation();
        return 0;
    }
    if (ms == 0)
        return 1;
    std::uint64_t waited = 0;
    Py_BEGIN_ALLOW_THREADS
        long pause_ns = 100000;
        for (std::uint64_t now = begin; !is_recording && now < deadline; now = monotonic_ns()) {
            const timespec pause{0, static_cast<long>(std::min<std::uint64_t>(
                                        static_cast<std::uint64_t>(pause_ns), deadline - now))};
            nanosleep(&pause, nullptr);
            pause_ns = std::min(pause_ns * 2, 2000000L);
            is_recording = emitter.is_recording();
        }
        if (is_recording)
            wait_for_session_activation();
        else
            waited = std::max<std::uint64_t>(monotonic_ns() - begin, 1);
    Py_END_ALLOW_THREADS
    return waited;
}

} // namespace

void wait_for_session_activation() noexcept
{
    sigset_t saved;
    lttng_ust_before_fork(&saved);
    lttng_ust_after_fork_parent(&saved);
}

void wait_for_session(const Emitter& emitter) noexcept
{
    s_state.lost_since_ns = 0;
    s_state.lost_waited_ns = 0;
    if (s_state.options.start_wait_ms < 0)
        return;
    const std::uint64_t waited = wait_for_recording(emitter, s_state.options.start_wait_ms);
    if (waited == 0)
        return;
    s_state.lost_waited_ns = waited;
    s_state.lost_since_ns = monotonic_ns();
    tally().start_waited_ns.store(waited);
    tally().start_lost_ns.store(0);
}

void end_lost_start() noexcept
{
    if (s_state.lost_since_ns == 0)
        return;
    const std::uint64_t lost = std::max<std::uint64_t>(monotonic_ns() - s_state.lost_since_ns, 1);
    s_state.lost_since_ns = 0;
    // The event first: the tally is what the process and pyust run read to learn that the
    // start was told (the watcher thread may emit it while the main thread polls the tally
    // and then exits; stored first, the process could end before the event was written).
    s_state.emitter->lost_start(lost, s_state.lost_waited_ns);
    tally().start_lost_ns.store(lost);
}

void on_session_change() noexcept
{
    s_state.was_code_enabled = s_state.emitter->is_code_enabled();
    if (s_state.was_code_enabled) {
        wait_for_session_activation();
        s_state.emitter->begin();
        rundown();
        end_lost_start();
    }
}

} // namespace pyust::hook
