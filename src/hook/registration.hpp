// Registration of code objects (internal to src/hook): the CodeInfo of a code
// object, found in its co_extra slot or registered on first sight (an id, the
// names behind it, python:code), with the filter's verdict cached on it; and
// the names of C callables for python:c_call. Every function requires the GIL
// and never raises into the traced program.
#pragma once

#include <string>

#include "hook/python_compat.hpp"
#include "hook/registry.hpp"

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

// A task's root frame runs code the filter leaves out (tasks.hpp): its python:code, once per
// generation, so that its call and return name it. Needs init(); the GIL held. noexcept.
void register_root(CodeInfo& info) noexcept;

inline bool is_traced(const CodeInfo* info) noexcept
{
    return info != nullptr && (info->trace & k_traced) != 0;
}

// Marks one code object as never traced (pyust attach's injected code, which
// runs on top of the program's stack). Needs init(); the GIL held.
void hide_code(PyCodeObject* code) noexcept;

// The name of a C callable and its module or type, for python:c_call (no
// allocation: the names live in the objects). noexcept.
void c_function_names(PyObject* callable, const char** name, const char** owner) noexcept;

// globals["__name__"] of the frame, or "?". Throws std::bad_alloc.
std::string module_of(PyFrameObject* frame);

} // namespace pyust::hook
