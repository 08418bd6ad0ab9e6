// The frame-evaluation back end (see backend_eval.hpp). With a frame-evaluation
// function set, CPython 3.11 evaluates every Python frame through it: calls,
// generator resumptions and throws, and a generator's creation, which runs the
// new frame only as far as RETURN_GENERATOR (no profiler sees it: skipped
// here). The function emits the call, evaluates the frame with the default
// evaluator, and emits the return (unwind=1 when the frame raised).
//
// Frames that were running when the function went in never pass through it:
// the caller's traced ones were announced by start(), and are closed when a
// call made from below them shows they have returned (at the latest at stop()).
// That is why this back end serves only starts where no other thread runs
// Python code (why_not()).
#include "backend_eval.hpp"

#if PYUST_HAS_EVAL_BACKEND

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <pthread.h>

#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE

#include "core.hpp"

namespace pyust::hook::eval_frame {
namespace {

constexpr int k_generator_kinds = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR;

// Bumped by every install() and uninstall() (GIL): a frame's return is emitted
// only when the epoch of its call still holds, so frames still on a C stack
// after stop() or a new start() stay silent.
std::uint64_t s_epoch = 1;
bool s_is_installed = false;

// The traced frames the thread that installed the function was running,
// outermost first, as far as they are known not to have returned.
struct Announced {
    _PyInterpreterFrame* frame;
    const CodeInfo* info;
};
std::vector<Announced>& s_announced = *new std::vector<Announced>; // never destroyed
PyThreadState* s_announcer = nullptr;
std::uint64_t s_announcer_id = 0; // its thread state's id (a fork may reuse the address)
// Wrapped frames running on the announcer's thread: while there are some, the
// announced frames are below them and cannot return.
std::uint32_t s_announcer_depth = 0;

// The address below which a thread's C stack counts as deep: a quarter of it
// used (0: not known yet; 1: never, its bounds unknown).
thread_local std::uintptr_t t_deep_below __attribute__((tls_model("initial-exec"))) = 0;

std::uintptr_t deep_stack_bound() noexcept
{
    pthread_attr_t attributes;
    void* lowest = nullptr;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0)
        return 1;
    const bool is_known = pthread_attr_getstack(&attributes, &lowest, &size) == 0;
    pthread_attr_destroy(&attributes);
    if (!is_known || size == 0)
        return 1;
    return reinterpret_cast<std::uintptr_t>(lowest) + size / 4 * 3; // stacks grow down
}

inline bool is_stack_deep() noexcept
{
    const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    if (t_deep_below == 0)
        t_deep_below = deep_stack_bound();
    return here < t_deep_below;
}

bool is_in_chain(const _PyInterpreterFrame* frame, _PyInterpreterFrame* top) noexcept
{
    for (const _PyInterpreterFrame* f = top; f != nullptr; f = f->previous) {
        if (f == frame)
            return true;
    }
    return false;
}

// Returns for the announced frames that are no longer on the stack under top.
void close_returned(_PyInterpreterFrame* top) noexcept
{
    while (!s_announced.empty() && !is_in_chain(s_announced.back().frame, top)) {
        s_state.emitter->ret(*s_announced.back().info, false);
        s_announced.pop_back();
    }
    if (s_announced.empty())
        s_announcer = nullptr;
}

// Whether the default evaluator will refuse the frame with a RecursionError
// before it runs (its entry check, _Py_EnterRecursiveCallTstate): a profile
// function never sees such a frame.
inline bool will_overflow(const PyThreadState* tstate) noexcept
{
    const int remaining = tstate->recursion_remaining;
    return remaining <= 0 && tstate->recursion_headroom == 0 &&
           tstate->recursion_limit - remaining + 1 >= Py_GetRecursionLimit();
}

// Frames a profile function would not see: a generator's creation, which runs
// only as far as RETURN_GENERATOR; code run while the interpreter holds its
// tracing off (audit hooks, Python-level trace and profile functions); and a
// frame refused for recursion.
inline bool is_unseen(PyThreadState* tstate, _PyInterpreterFrame* frame) noexcept
{
    return ((frame->f_code->co_flags & k_generator_kinds) != 0 &&
            frame->owner == FRAME_OWNED_BY_THREAD) ||
           tstate->tracing != 0 || will_overflow(tstate);
}

PyObject* evaluate(PyThreadState* tstate, _PyInterpreterFrame* frame, int throwflag)
{
    if (is_unseen(tstate, frame))
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    PyCodeObject* code = frame->f_code;
    if (is_stack_deep()) {
        // The profile function sees this frame start, and the others return.
        hand_over_to_profile();
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    const std::uint64_t epoch = s_epoch;
    const bool is_announcer = tstate == s_announcer && tstate->id == s_announcer_id;
    if (is_announcer) {
        if (s_announcer_depth == 0)
            close_returned(tstate->cframe->current_frame); // the caller's stack
        ++s_announcer_depth;
    }
    const CodeInfo* info = info_for_code_in(code, frame->f_globals);
    const bool is_emitting = is_traced(info);
    if (is_emitting) {
        check_session();
        s_state.emitter->call(*info);
    }
    PyObject* result = _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    if (s_epoch == epoch) {
        if (is_announcer)
            --s_announcer_depth;
        if (is_emitting)
            s_state.emitter->ret(*info, result == nullptr);
    }
    return result;
}

// ------------------------------------------------------------------- probe
//
// Whether the interpreter calls the function for every Python-to-Python call:
// a __getitem__ and a plain function called 1,000 times each in a loop that
// warms up (specialises) meanwhile, counted by a function that only counts.

const char* const k_probe_source = "class Probe:\n"
                                   "    def __getitem__(self, key):\n"
                                   "        return key\n"
                                   "def probed(x):\n"
                                   "    return x\n"
                                   "def run(n):\n"
                                   "    probe = Probe()\n"
                                   "    for i in range(n):\n"
                                   "        probe[i]\n"
                                   "        probed(i)\n";
constexpr long k_probe_calls = 1000;

PyObject* s_probed_codes[2] = {nullptr, nullptr};
long s_probed_entries = 0;

PyObject* count_entries(PyThreadState* tstate, _PyInterpreterFrame* frame, int throwflag)
{
    const auto* code = reinterpret_cast<PyObject*>(frame->f_code);
    if (code == s_probed_codes[0] || code == s_probed_codes[1])
        ++s_probed_entries;
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

// A new reference to globals[name].attribute (or to globals[name] with no attribute).
PyObject* lookup(PyObject* globals, const char* name, const char* attribute) noexcept
{
    PyObject* object = PyDict_GetItemString(globals, name); // borrowed
    if (object == nullptr)
        return nullptr;
    if (attribute == nullptr) {
        Py_INCREF(object);
        return object;
    }
    return PyObject_GetAttrString(object, attribute);
}

bool run_probe() noexcept
{
    compat::SavedError saved;
    PyObject* globals = PyDict_New();
    if (globals == nullptr ||
        PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) {
        Py_XDECREF(globals);
        PyErr_Clear();
        return false;
    }
    bool is_exact = false;
    PyObject* done = PyRun_String(k_probe_source, Py_file_input, globals, globals);
    PyObject* getitem = lookup(globals, "Probe", "__getitem__");
    PyObject* probed = lookup(globals, "probed", nullptr);
    PyObject* run = lookup(globals, "run", nullptr);
    PyObject* codes[2] = {getitem != nullptr ? PyObject_GetAttrString(getitem, "__code__")
                                             : nullptr,
                          probed != nullptr ? PyObject_GetAttrString(probed, "__code__") : nullptr};
    if (done != nullptr && run != nullptr && codes[0] != nullptr && codes[1] != nullptr) {
        PyInterpreterState* interp = PyInterpreterState_Get();
        s_probed_codes[0] = codes[0];
        s_probed_codes[1] = codes[1];
        s_probed_entries = 0;
        _PyInterpreterState_SetEvalFrameFunc(interp, count_entries);
        PyObject* ran = PyObject_CallFunction(run, "l", k_probe_calls);
        _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
        is_exact = ran != nullptr && s_probed_entries == 2 * k_probe_calls;
        Py_XDECREF(ran);
        s_probed_codes[0] = s_probed_codes[1] = nullptr;
    }
    for (PyObject* object : {done, getitem, probed, run, codes[0], codes[1]})
        Py_XDECREF(object);
    PyDict_Clear(globals); // the functions and the class refer back to it
    Py_DECREF(globals);
    PyErr_Clear();
    return is_exact;
}

bool is_exact() noexcept
{
    static const bool is_exact = run_probe();
    return is_exact;
}

bool is_python_running_elsewhere(PyThreadState* self) noexcept
{
    PyInterpreterState* interp = PyThreadState_GetInterpreter(self);
    for (PyThreadState* t = PyInterpreterState_ThreadHead(interp); t != nullptr;
         t = PyThreadState_Next(t)) {
        if (t != self && t->cframe != nullptr && t->cframe->current_frame != nullptr)
            return true;
    }
    return false;
}

} // namespace

const char* why_not(const Options& options) noexcept
{
    if (options.lines || options.c_calls)
        return "lines or C calls";
    if (const char* forced = std::getenv("PYUST_BACKEND");
        forced != nullptr && std::strcmp(forced, "setprofile") == 0)
        return "PYUST_BACKEND=setprofile";
    PyThreadState* self = PyThreadState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(PyThreadState_GetInterpreter(self)) !=
        _PyEval_EvalFrameDefault)
        return "another tool's frame-evaluation function is in";
    if (is_python_running_elsewhere(self))
        return "another thread runs Python code";
    if (!is_exact())
        return "this interpreter skips the function for some calls";
    return nullptr;
}

void install() noexcept
{
    ++s_epoch;
    PyThreadState* self = PyThreadState_Get();
    s_announced.clear();
    s_announcer_depth = 0;
    try {
        for (_PyInterpreterFrame* f = self->cframe->current_frame; f != nullptr; f = f->previous) {
            if (_PyFrame_IsIncomplete(f))
                continue;
            const CodeInfo* info = info_for_code_in(f->f_code, f->f_globals);
            if (is_traced(info))
                s_announced.push_back({f, info});
        }
    } catch (const std::bad_alloc&) {
        s_announced.clear(); // those frames will show as never returning
    }
    std::reverse(s_announced.begin(), s_announced.end());
    s_announcer = s_announced.empty() ? nullptr : self;
    s_announcer_id = self->id;
    _PyInterpreterState_SetEvalFrameFunc(PyThreadState_GetInterpreter(self), evaluate);
    s_is_installed = true;
}

void uninstall(bool close_stacks) noexcept
{
    if (!s_is_installed)
        return;
    PyThreadState* self = PyThreadState_Get();
    PyInterpreterState* interp = PyThreadState_GetInterpreter(self);
    if (_PyInterpreterState_GetEvalFrameFunc(interp) == evaluate)
        _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
    ++s_epoch;
    s_is_installed = false;
    if (close_stacks && self == s_announcer && self->id == s_announcer_id)
        close_returned(self->cframe->current_frame);
    s_announced.clear();
    s_announcer = nullptr;
}

bool is_installed() noexcept
{
    return s_is_installed;
}

} // namespace pyust::hook::eval_frame

#endif // PYUST_HAS_EVAL_BACKEND
