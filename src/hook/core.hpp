// What the hook's back ends share (internal to src/hook): the process-wide
// state (state.hpp), code-object lookup and registration, stack announcements,
// and the back-end interface (backend.hpp). Every function requires the GIL.
#pragma once

#include <cstdint>

#include "backend.hpp"
#include "hook.hpp"
#include "python_compat.hpp"
#include "registry.hpp"
#include "state.hpp"

namespace pyust::hook {

// The CodeInfo of a code object, registering it on first sight (frame: the
// frame running it, for its module name; nullptr means the current frame).
// Takes the verdict again when the filter changed since. nullptr only when
// memory ran out. noexcept.
CodeInfo* info_for_code(PyCodeObject* code, PyFrameObject* frame) noexcept;

// info_for_code() of code about to run with these globals (the module's
// namespace: its "__name__" names the module). noexcept.
CodeInfo* info_for_code_in(PyCodeObject* code, PyObject* globals) noexcept;

// info_for_code() of the code the frame runs. noexcept.
CodeInfo* info_for_frame(PyFrameObject* frame) noexcept;

inline bool is_traced(const CodeInfo* info) noexcept
{
    return info != nullptr && info->is_traced;
}

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
// Marks one code object as never traced (pyust attach's injected code, which
// runs on top of the program's stack). Needs init(); the GIL held.
void hide_code(PyCodeObject* code) noexcept;
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

// The name of a C callable and its module or type, for python:c_call (no
// allocation: the names live in the objects). noexcept.
void c_function_names(PyObject* callable, const char** name, const char** owner) noexcept;

void emit_process() noexcept;

} // namespace pyust::hook
