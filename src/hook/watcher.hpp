// The session watcher (internal to src/hook): a native thread that keeps the
// interpreter hooks out while no session records python:* (dormant hooks) and
// puts them back when one does, writes the fast mode's batches now and then,
// and on 3.11 hands the GIL round to unstick traced threads (watcher.cpp says
// how and why). stop_watcher() is hook.hpp's. The fork protocol (fork.cpp)
// holds the watcher's thread-state guard across fork() and makes the child
// forget the thread. Every function requires the GIL unless it says otherwise.
#pragma once

#include "hook/hook.hpp"

namespace pyust::hook {

// Records whether the interpreter hooks are installed (s_state.is_hooked, and
// the watcher's copy it reads without the GIL). noexcept.
void set_hooked(bool is_hooked) noexcept;

// Tells the watcher the options of the start() being made, before it starts.
void set_watcher_options(const Options& options) noexcept;

// Whether tracing with these options needs the watcher even while the hooks are in.
bool needs_watcher(const Options& options) noexcept;

// Starts the watcher unless it runs. false when no thread could be made.
bool start_watcher() noexcept;

// In fork()'s prepare handler: takes the guard under which the watcher makes its
// thread state (watcher.cpp, s_thread_state_guard), up to 3.11; the parent's
// handler gives it back, the child's makes it afresh. Without the GIL.
void hold_thread_state_guard() noexcept;
void release_thread_state_guard() noexcept;
void reset_thread_state_guard() noexcept;

// In the child of fork(): the watcher's thread does not exist there; forgets
// it, so that start_watcher() starts a new one. Without the GIL.
void forget_watcher() noexcept;

} // namespace pyust::hook
