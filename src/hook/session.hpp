// The hook and the sessions (internal to src/hook): LTTng-UST registers with the
// session daemons in the background, so a session may reach the process after
// it started, or never while pyust waits (Options::start_wait_ms). Here: the
// wait before the first event, the lost start noted when the wait gives up and
// reported once a session records, and the check at every traced call for a
// session that started recording python:code since (a rundown then names
// everything). Every function requires the GIL.
#pragma once

#include "hook/emitter.hpp"
#include "hook/state.hpp"

namespace pyust::hook {

// LTTng-UST turns a session's tracepoints on and then, one or more round trips
// to the session daemon later, marks the session active, both within one hold
// of its internal lock while it handles the daemon's command. An event emitted
// in between is dropped: a rundown made there would leave a trace whose calls
// name codes it never registers. lttng_ust_before_fork() takes that lock and
// lttng_ust_after_fork_parent() gives it back, so once they return, the session
// whose tracepoints the hook saw turned on records. LTTng-UST's thread never
// takes the GIL while it holds the lock: the wait may be made with the GIL.
void wait_for_session_activation() noexcept;

// Before the process's first event (start(), a fork child): waits for the session as the
// options ask, and when it gives up, notes that the process runs unrecorded from now on.
void wait_for_session(const Emitter& emitter) noexcept;

// A session records the process now: if its start went unrecorded, says for how long, in
// the trace (after the rundown that names its code) and in its tally.
void end_lost_start() noexcept;

// The rundown check_session() makes when python:code's enabled flag changed.
void on_session_change() noexcept;

// If a session started recording python:code since the last check, re-emit
// every registration (a rundown). Cheap: a load or two of LTTng's enabled
// flags, inline at every traced call.
inline void check_session() noexcept
{
    if (s_state.emitter->is_code_enabled() != s_state.was_code_enabled) [[unlikely]]
        on_session_change();
}

} // namespace pyust::hook
