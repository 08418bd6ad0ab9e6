// Reading the interpreter's own frames in place (3.11 on, where the frame-evaluation back end is
// built): the thread's innermost frame, whether a frame is complete, its code, the generator
// (or coroutine) that owns it, and how a coroutine's frame was resumed. Inline, for the back
// ends' hot paths: the sys.monitoring back end tests every coroutine frame that starts or
// resumes, which a call into another file made cost twice as much (W4, 3.13).
//
// These are CPython's internal structures, whose layout changes with each minor version; each
// function names what moved. Every function requires the GIL.
#pragma once

#include "hook/backend.hpp" // PYUST_HAS_EVAL_BACKEND

#if PYUST_HAS_EVAL_BACKEND

// CPython's internal headers are C: 3.13's use anonymous structs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#define Py_BUILD_CORE 1
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_genobject.h"
#include "internal/pycore_interpframe.h"
#endif
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#pragma GCC diagnostic pop

namespace pyust::hook::frames {

constexpr int k_generator_kinds = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR;

// The frame's code: f_code up to 3.12, then f_executable.
inline PyCodeObject* code_of(_PyInterpreterFrame* frame) noexcept
{
#if PY_VERSION_HEX >= 0x030D0000
    return _PyFrame_GetCode(frame);
#else
    return frame->f_code;
#endif
}

// Whether a frame on a thread's chain is a Python function's, past its set-up: from 3.12 the
// chain also holds the evaluator's own entry frames (owned by the C stack, or the interpreter
// on 3.14), whose other fields are not set.
inline bool is_complete(_PyInterpreterFrame* frame) noexcept
{
#if PY_VERSION_HEX >= 0x030E0000
    if (frame->owner >= FRAME_OWNED_BY_INTERPRETER)
        return false;
#elif PY_VERSION_HEX >= 0x030C0000
    if (frame->owner == FRAME_OWNED_BY_CSTACK)
        return false;
#endif
    return !_PyFrame_IsIncomplete(frame);
}

// The thread's innermost frame, complete or not (in cframe up to 3.12), or nullptr.
inline _PyInterpreterFrame* innermost_frame(PyThreadState* tstate) noexcept
{
#if PY_VERSION_HEX >= 0x030D0000
    return tstate->current_frame;
#else
    return tstate->cframe != nullptr ? tstate->cframe->current_frame : nullptr;
#endif
}

// The first complete frame from frame outwards, or nullptr.
[[gnu::always_inline]] inline _PyInterpreterFrame*
complete_from(_PyInterpreterFrame* frame) noexcept
{
    while (frame != nullptr && !is_complete(frame))
        frame = frame->previous;
    return frame;
}

// The thread's innermost complete frame (the one running, as PyEval_GetFrame() would find it),
// or nullptr.
inline _PyInterpreterFrame* innermost_complete(PyThreadState* tstate) noexcept
{
    return complete_from(innermost_frame(tstate));
}

// Whether a generator's or coroutine's frame is its code's.
inline bool is_generator_code(_PyInterpreterFrame* frame) noexcept
{
    return (code_of(frame)->co_flags & k_generator_kinds) != 0;
}

// Whether a coroutine's frame (async def) that caller resumes or starts is an asyncio task's
// root (see tasks.hpp): caller does not await it, i.e. is no coroutine or generator (Handle._run
// for the C Task's step, Task.__step for the pure-Python one's, create_task for an eager task's
// first step).
[[gnu::always_inline]] inline bool is_root(_PyInterpreterFrame* caller) noexcept
{
    caller = complete_from(caller);
    return caller == nullptr || !is_generator_code(caller);
}

// Whether frame, the thread's innermost, is a generator's (or coroutine's) frame that a
// generator's frame resumed or started: the common case of a coroutine's frame that an await
// runs, which is_root() would answer false for, told by the frames' owners alone (a frame a
// generator owns is complete and runs a generator's code). False may still be no root.
[[gnu::always_inline]] inline bool is_resumed_by_generator(_PyInterpreterFrame* frame) noexcept
{
    return frame != nullptr && frame->owner == FRAME_OWNED_BY_GENERATOR &&
           frame->previous != nullptr && frame->previous->owner == FRAME_OWNED_BY_GENERATOR;
}

// Whether a generator's frame state, once its evaluation returned a value, is a suspension (a
// yield): 3.11 to 3.13 put the suspended states (and created) before FRAME_EXECUTING; 3.15
// renumbered them all after FRAME_CREATED (0), and 3.14 has the macro 3.15 keeps.
constexpr bool is_suspended(int state) noexcept
{
#if PY_VERSION_HEX >= 0x030E0000
    return FRAME_STATE_SUSPENDED(state);
#else
    return state < FRAME_EXECUTING;
#endif
}

// The generator (or coroutine) that owns the frame, or nullptr.
inline PyGenObject* generator_of(_PyInterpreterFrame* frame) noexcept
{
    if (frame->owner != FRAME_OWNED_BY_GENERATOR)
        return nullptr;
#if PY_VERSION_HEX >= 0x030E0000
    return _PyGen_GetGeneratorFromFrame(frame);
#else
    return _PyFrame_GetGenerator(frame);
#endif
}

// The generator of the outermost frame of the run of generators' and coroutines' frames from
// caller out (an exception thrown into a task links its chain's frames, its root's outermost),
// or nullptr when caller is no such frame.
inline PyGenObject* chain_root(_PyInterpreterFrame* caller) noexcept
{
    PyGenObject* root = nullptr;
    for (; caller != nullptr; caller = caller->previous) {
        if (!is_complete(caller))
            continue;
        if (!is_generator_code(caller))
            break;
        root = generator_of(caller);
    }
    return root;
}

// The backend::Chain of a complete frame that starts or resumes.
inline backend::Chain chain_of(_PyInterpreterFrame* frame) noexcept
{
    return {frame, generator_of(frame), chain_root(frame->previous)};
}

} // namespace pyust::hook::frames

#endif // PYUST_HAS_EVAL_BACKEND
