// The interface between the hook's core and its back ends, the interpreter
// hooks themselves: setprofile/settrace up to 3.11 (backend_profile.cpp),
// sys.monitoring from 3.12 (backend_monitoring.cpp), each of which may hand
// its calls and returns to the frame-evaluation function (backend_eval.hpp).
// The core calls the back ends only through this header. Every function
// requires the GIL.
#pragma once

#include "hook/hook.hpp"
#include "hook/python_compat.hpp"

// Whether the frame-evaluation back end is built (3.11 on). Free-threaded builds
// are left out: the function keeps process-wide state under the GIL.
#if PY_VERSION_HEX >= 0x030B0000 && !defined(Py_GIL_DISABLED)
#define PYUST_HAS_EVAL_BACKEND 1
#else
#define PYUST_HAS_EVAL_BACKEND 0
#endif

namespace pyust::hook::backend {

// "setprofile" or "monitoring", as python:process reports it. noexcept.
const char* name() noexcept;

// Throws TracerError when another tool holds what this back end needs.
// Precondition: s_state.options holds the options of the start() being made.
void check_free();

// Installs the hook for every thread. With is_caller_announced, the calling
// thread's stack was announced by start() and it gets the steady callbacks;
// without (the session watcher's thread, which runs no Python), every thread
// announces its stack at its next event. Throws TracerError.
void install(bool is_caller_announced);

// Removes the hook from every thread. With close_stacks, each thread's open
// frames get returns (stop()); without, they are left (a session ended).
// noexcept.
void uninstall(bool close_stacks) noexcept;

// Installs the hook on the calling thread, started after install(). noexcept.
void attach_current_thread() noexcept;

// Whether innermost_runs() can read the calling thread's frames on this
// interpreter (where the frame-evaluation back end is built, which reads them).
constexpr bool k_reads_frames_in_place = PYUST_HAS_EVAL_BACKEND;

// Whether the calling thread runs a Python frame (past its set-up), as
// PyEval_GetFrame() would find it; globals is then that frame's (borrowed) when
// it runs code, else nullptr. Read from the interpreter's own frame, where
// PyEval_GetFrame() would make a frame object, which lives on with the frame
// (and changes what a program sees: CPython's test_frame makes one in a
// garbage-collector callback). Precondition: k_reads_frames_in_place
// (backend_eval.cpp defines it).
bool innermost_runs(PyObject* code, PyObject*& globals) noexcept;

// A coroutine's frame (frame: an opaque identity, stable while the frame runs or is suspended)
// and its coroutine, resumed by a coroutine's frame (not a root), and task_root: the coroutine
// of the outermost frame of the run of coroutines' and generators' frames that called it
// (tasks.hpp: when the thread runs no step, the root of the task an exception was thrown into),
// else nullptr. frames.hpp reads it in place from 3.11 on.
struct Chain {
    const void* frame;
    const void* coroutine;
    const void* task_root;
};

#if PYUST_HAS_PER_THREAD_SETTERS
// The setprofile back end's asyncio tests of a coroutine's frame object, read in place where
// k_reads_frames_in_place (3.11; 3.10 has the fields public), as the frame-evaluation back end
// reads frames. Precondition: k_reads_frames_in_place. noexcept.
// - When the frame, which starts or resumes (PyTrace_CALL), is an asyncio task's root (its
//   caller does not await it), its coroutine object; else nullptr.
const void* root_coroutine_of(PyFrameObject* frame) noexcept;
// - Whether the frame, which returns to the profile function (PyTrace_RETURN), yielded (it is
//   suspended) rather than returned for good.
bool has_yielded(PyFrameObject* frame) noexcept;
// - The Chain of the frame, which starts or resumes (PyTrace_CALL).
Chain chain_of(PyFrameObject* frame) noexcept;
#endif

} // namespace pyust::hook::backend
