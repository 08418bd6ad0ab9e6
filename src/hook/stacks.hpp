// Stacks and rundowns (internal to src/hook): a thread's stack announced as
// calls when pyust starts watching it (start(), a woken hook, a fork child,
// greenlet's switches) and closed as returns when it stops; frames hidden from
// the trace; and the rundown (hook.hpp) that re-emits the process, thread and
// code registrations for a session that started late. Every function requires
// the GIL and never raises into the traced program.
#pragma once

#include "hook/python_compat.hpp"

namespace pyust::hook {

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

// python:process for this process, with the current start's options and back
// end. The rundown (hook.hpp's rundown(), defined here) begins with it.
void emit_process() noexcept;

} // namespace pyust::hook
