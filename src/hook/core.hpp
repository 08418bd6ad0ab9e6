// What the hook's back ends share (internal to src/hook): the process-wide
// state (state.hpp), code-object lookup and registration, stack announcements,
// and the back-end interface (backend.hpp). Every function requires the GIL.
#pragma once

#include <cstdint>

#include "backend.hpp"
#include "hook.hpp"
#include "python_compat.hpp"
#include "registration.hpp"
#include "registry.hpp"
#include "state.hpp"

namespace pyust::hook {

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

// Emits a call for every traced frame of the stack ending at frame,
// outermost first (the thread's stack when pyust starts watching it).
void open_stack(PyFrameObject* frame) noexcept;
// Emits a return for every traced frame from frame to the outermost.
void close_stack(PyFrameObject* frame) noexcept;
// Marks the code of every frame of the stack as never traced.
void hide_stack(PyFrameObject* frame) noexcept;
// A switch between two stacks of the calling thread (greenlet): the frames of
// the stack left (origin: its top frame, null when that stack has ended) stop
// running and those of the stack entered (target: its top frame, null for a new
// one) run again, as a generator yields and resumes: returns for the first,
// innermost first, then calls for the second, outermost first. With c_calls,
// the C call each suspended stack sits in (its switch()) is closed and reopened
// with it. No-op unless tracing with the hooks installed.
void switch_stacks(PyFrameObject* origin, PyFrameObject* target) noexcept;

// frame's caller as a new reference (or nullptr), or frame itself (a new
// reference) when skip_top is false: the part of a thread's stack that is
// already open when an event arrives for frame.
PyFrameObject* open_part(PyFrameObject* frame, bool skip_top) noexcept;

void emit_process() noexcept;

} // namespace pyust::hook
