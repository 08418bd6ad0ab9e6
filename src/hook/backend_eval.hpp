// A back end for CPython 3.11: a frame-evaluation function
// (PEP 523) that wraps each Python frame the interpreter evaluates, where a
// profile function would put the whole interpreter on its slower tracing path
// (tests/bench/OVERHEAD.md, "The floor under every profile hook"). It serves
// calls and returns only; backend_profile.cpp chooses it, and falls back to
// itself, for lines, C calls, a taken slot and the rest (why_not()).
#pragma once

#include "python_compat.hpp"

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define PYUST_HAS_EVAL_BACKEND 1
#else
#define PYUST_HAS_EVAL_BACKEND 0
#endif

#if PYUST_HAS_EVAL_BACKEND

#include "hook.hpp"

namespace pyust::hook::eval_frame {

// Why this back end cannot serve a start() with these options right now, or
// nullptr when it can: no lines and no C calls (either mode); no
// PYUST_BACKEND=setprofile; the interpreter's frame-evaluation slot free; no
// other thread running Python code (this back end sees frames as they start:
// it announces only the caller's stack); and the interpreter calling the
// function for every Python-to-Python call, which a probe checks once per
// process (Debian 12's 3.11.2 enters a warmed __getitem__ without it).
const char* why_not(const Options& options) noexcept;

// Puts the function in. The caller's stack was announced (core.cpp's start()).
void install() noexcept;

// Takes it out. Frames still on the C stack no longer emit. With
// close_stacks, the frames the calling thread announced that have returned
// since get their returns now (core.cpp's stop() closes the rest).
void uninstall(bool close_stacks) noexcept;

bool is_installed() noexcept;

// Puts every thread on the profile function, as if it had been there since
// start(), and says so in a python:process event (backend_profile.cpp). The
// function calls it when a thread's C stack runs deep: with it in, each Python
// call nests a C call, where the interpreter would otherwise run it in the
// caller's C frame, so a recursion the program runs untraced could overflow
// the C stack.
void hand_over_to_profile() noexcept;

} // namespace pyust::hook::eval_frame

#endif // PYUST_HAS_EVAL_BACKEND
