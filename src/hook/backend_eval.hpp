// A back end for CPython 3.11 on: a frame-evaluation function (PEP 523) that
// wraps each Python frame the interpreter evaluates, where a profile function
// would put the whole interpreter on its slower tracing path (3.11: half the
// fast mode's instructions on W1) and sys.monitoring makes a callback call per
// event (3.12 on: 3% to 5% of W1's instructions on 3.14)
// (tests/bench/OVERHEAD.md, "The floor under every profile hook"). It serves
// calls and returns only; the version's own back end (backend_profile.cpp up
// to 3.11, backend_monitoring.cpp from 3.12) chooses it, and serves itself for
// lines, C calls, a taken slot and the rest (why_not()).
#pragma once

#include "hook/backend.hpp" // PYUST_HAS_EVAL_BACKEND
#include "hook/python_compat.hpp"

#if PYUST_HAS_EVAL_BACKEND

#include "hook/hook.hpp"

namespace pyust::hook::eval_frame {

// Why this back end cannot serve a start() with these options right now, or
// nullptr when it can: no lines and no C calls (either mode); no
// PYUST_BACKEND=setprofile; the interpreter's frame-evaluation slot free; no
// sys.settrace() function set (3.12 on: see hand_over()); no
// other thread running Python code (this back end sees frames as they start:
// it announces only the caller's stack); and the interpreter calling the
// function for every Python-to-Python call, which a probe checks once per
// process (Debian 12's 3.11.2 enters a warmed __getitem__ without it, which
// CPython 3.11.4 fixed: gh-104405).
const char* why_not(const Options& options) noexcept;

// Chooses this back end for the start() being made, or not (why_not()).
void choose(const Options& options) noexcept;

// Whether the start runs on it (python:process then says "eval-frame").
bool is_chosen() noexcept;

// Puts the function in if it was chosen and the caller's stack was announced
// (core.cpp's start()); a session waking a dormant hook keeps the version's
// own back end: every thread runs Python code then, whose stacks only that
// back end's callbacks can announce. Whether it did.
bool install_if_chosen(bool is_caller_announced) noexcept;

// Takes it out. Frames still on the C stack no longer emit. With
// close_stacks, the frames the calling thread announced that have returned
// since get their returns now (core.cpp's stop() closes the rest).
void uninstall(bool close_stacks) noexcept;

namespace detail {
extern bool s_is_installed; // backend_eval.cpp's; read inline on every sys.monitoring event
}

inline bool is_installed() noexcept
{
    return detail::s_is_installed;
}

// Whether code is the calling thread's innermost frame's (a sys.monitoring
// event of a frame the function evaluates, rather than one an extension
// module reports through the C API while its caller's frame runs).
bool is_running_frame_of(PyObject* code) noexcept;

// Puts every thread on the version's own back end, as if it had been there
// since start(), and says so in a python:process event. The function calls it
// when a thread's C stack or C recursion count runs deep: with it in, each
// Python call nests a C call, where the interpreter would otherwise run it in
// the caller's C frame, so a recursion the program runs untraced could
// overflow the C stack or meet 3.12's and 3.13's C recursion limit. And from
// 3.12, when a sys.settrace() function is set, whose events the function
// would change (backend_eval.cpp, is_settrace_set()).
[[gnu::cold, gnu::noinline]] void hand_over() noexcept;

// The version's own back end's part of hand_over(), defined by that back end
// (backend_profile.cpp, backend_monitoring.cpp): its hooks in, for every
// thread, with every running frame counted as announced.
void take_over() noexcept;

} // namespace pyust::hook::eval_frame

#endif // PYUST_HAS_EVAL_BACKEND

namespace pyust::hook::eval_frame {

// The name python:process reports: "eval-frame" when the function serves the
// start, else the version's own back end's (own).
inline const char* name_or(const char* own) noexcept
{
#if PYUST_HAS_EVAL_BACKEND
    return is_chosen() ? "eval-frame" : own;
#else
    return own;
#endif
}

} // namespace pyust::hook::eval_frame
