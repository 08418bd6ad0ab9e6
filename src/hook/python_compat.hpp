// Shims over the CPython C API differences between 3.9 and 3.13 that the hook
// needs, so its files read the same for every version, and the few C-API
// helpers every part of the hook shares (the emitters as well as the core).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <cstdint>

namespace pyust::hook::compat {

inline Py_ssize_t request_code_extra_index() noexcept
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Eval_RequestCodeExtraIndex(nullptr);
#else
    return _PyEval_RequestCodeExtraIndex(nullptr);
#endif
}

inline void* get_code_extra_by_api(PyCodeObject* code, Py_ssize_t index) noexcept
{
    void* extra = nullptr;
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Code_GetExtra(reinterpret_cast<PyObject*>(code), index, &extra) < 0) {
#else
    if (_PyCode_GetExtra(reinterpret_cast<PyObject*>(code), index, &extra) < 0) {
#endif
        PyErr_Clear();
        return nullptr;
    }
    return extra;
}

// What a code object's co_extra points to: CPython's _PyCodeObjectExtra (internal, the same
// from 3.6 on), its size and the tools' slots. Every traced event looks its code's slot up:
// read here directly, it costs a few instructions instead of an exported function's call and
// checks; but only once a probe on this interpreter (the first slot pyust sets) found the
// layout to be this one. Until then, and for good if it differs, through the API.
struct CodeExtraSlots {
    Py_ssize_t size;
    void* slots[1];
};
inline bool g_reads_code_extra_directly = false;
inline bool g_has_probed_code_extra = false;

inline void* get_code_extra(PyCodeObject* code, Py_ssize_t index) noexcept
{
    if (__builtin_expect(g_reads_code_extra_directly, 1)) {
        const auto* extra = static_cast<const CodeExtraSlots*>(code->co_extra);
        return extra != nullptr && index < extra->size ? extra->slots[index] : nullptr;
    }
    return get_code_extra_by_api(code, index);
}

inline void set_code_extra(PyCodeObject* code, Py_ssize_t index, void* extra) noexcept
{
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Code_SetExtra(reinterpret_cast<PyObject*>(code), index, extra) < 0)
#else
    if (_PyCode_SetExtra(reinterpret_cast<PyObject*>(code), index, extra) < 0)
#endif
        PyErr_Clear();
    if (!g_has_probed_code_extra && extra != nullptr) {
        g_has_probed_code_extra = true;
        const auto* slots = static_cast<const CodeExtraSlots*>(code->co_extra);
        g_reads_code_extra_directly = slots != nullptr && index < slots->size &&
                                      slots->slots[index] == extra &&
                                      get_code_extra_by_api(code, index) == extra;
    }
}

// The code object's qualified name: co_qualname exists from 3.11 on.
inline PyObject* code_qualname(PyCodeObject* code) noexcept
{
#if PY_VERSION_HEX >= 0x030B0000
    return code->co_qualname;
#else
    return code->co_name;
#endif
}

// A new reference to the frame's globals.
inline PyObject* frame_globals(PyFrameObject* frame) noexcept
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetGlobals(frame);
#else
    Py_XINCREF(frame->f_globals);
    return frame->f_globals;
#endif
}

// Installs a profile or trace function on another thread's state. Before 3.12
// CPython exports the per-thread setters; from 3.12 on the hook uses
// sys.monitoring instead and only the all-threads setters remain public.
//
// On 3.11 pyust sets its own C functions by writing the thread state's fields,
// as _PyEval_SetProfile does, without its two side effects: the sys.setprofile
// audit event, whose Python hooks (regrtest has one) run in the middle of
// pyust's install and may release the GIL, and 3.11's process-wide re-entrancy
// flag, held meanwhile, which makes any other thread's setprofile fail with
// "Cannot install a profile function while another profile function is being
// installed" (and sets that error on the target thread, not the caller). Never
// fails on 3.11.
#if PY_VERSION_HEX < 0x030C0000
#define PYUST_HAS_PER_THREAD_SETTERS 1
#if PY_VERSION_HEX >= 0x030B0000
// _PyThreadState_UpdateTracingState (internal to 3.11): no tracing while a
// callback runs (the interpreter sets it back after).
inline void update_tracing_state(PyThreadState* tstate) noexcept
{
    const bool is_tracing = tstate->tracing == 0 &&
                            (tstate->c_tracefunc != nullptr || tstate->c_profilefunc != nullptr);
    tstate->cframe->use_tracing = is_tracing ? 255 : 0;
}
inline int set_profile(PyThreadState* tstate, Py_tracefunc fn) noexcept
{
    PyObject* previous = tstate->c_profileobj;
    tstate->c_profilefunc = nullptr;
    tstate->c_profileobj = nullptr;
    update_tracing_state(tstate);
    Py_XDECREF(previous); // may run code: the fields are consistent meanwhile
    tstate->c_profilefunc = fn;
    update_tracing_state(tstate);
    return 0;
}
inline int set_trace(PyThreadState* tstate, Py_tracefunc fn) noexcept
{
    PyObject* previous = tstate->c_traceobj;
    tstate->c_tracefunc = nullptr;
    tstate->c_traceobj = nullptr;
    update_tracing_state(tstate);
    Py_XDECREF(previous);
    tstate->c_tracefunc = fn;
    update_tracing_state(tstate);
    return 0;
}
#else
inline int set_profile(PyThreadState* tstate, Py_tracefunc fn) noexcept
{
    return _PyEval_SetProfile(tstate, fn, nullptr);
}
inline int set_trace(PyThreadState* tstate, Py_tracefunc fn) noexcept
{
    return _PyEval_SetTrace(tstate, fn, nullptr);
}
#endif
#else
#define PYUST_HAS_PER_THREAD_SETTERS 0
#endif

// CPython 3.11 has a livelock that tracing turns on (Python/ceval.c, DO_TRACING):
// with a profile or trace function set, a function's RESUME checks the eval
// breaker before the instruction pointer moves past it, and the breaker stays
// set while a signal is pending that only the main thread may handle. A traced
// thread other than the main one then re-runs that RESUME at 100% CPU until
// the main thread runs Python again; if the main thread is waiting for that
// thread (join(), executor shutdown) in a wait the signal does not interrupt
// (SA_RESTART: asyncio's add_signal_handler), neither ever moves. Untraced, the
// same thread goes past RESUME and the program ends. Any GIL hand-over
// recomputes the breaker for the thread that takes or drops the GIL (without
// the main thread's signals), which ends the spin: the session watcher takes
// the GIL now and then while the hooks are in (watcher.cpp). 3.10 checks the
// breaker after its call event, 3.12 on uses sys.monitoring: neither spins.
constexpr bool k_traced_threads_spin_on_signals =
    PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000;

// Up to 3.11, PyOS_AfterFork_Child takes the runtime's lock (HEAD_LOCK, deleting the other
// threads' states) before it reinitialises it: the child of a fork() made while another
// thread held that lock blocks for ever. Every thread but the watcher takes it with the GIL,
// which the thread calling os.fork() holds; the watcher makes its thread state without the
// GIL (watcher.cpp). 3.12 on reinitialise the lock first.
constexpr bool k_fork_child_needs_head_lock = PY_VERSION_HEX < 0x030C0000;

inline bool is_finalizing() noexcept
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
}

// The pending exception, saved around work that may clobber it.
class SavedError {
public:
    // clang-format 14 would split these one-liners between #if branches.
    // clang-format off
#if PY_VERSION_HEX >= 0x030C0000
    SavedError() noexcept : m_exc(PyErr_GetRaisedException()) {}
    ~SavedError() { PyErr_SetRaisedException(m_exc); }
#else
    SavedError() noexcept { PyErr_Fetch(&m_type, &m_value, &m_traceback); }
    ~SavedError() { PyErr_Restore(m_type, m_value, m_traceback); }
#endif
    // clang-format on
    SavedError(const SavedError&) = delete;
    SavedError& operator=(const SavedError&) = delete;

private:
#if PY_VERSION_HEX >= 0x030C0000
    PyObject* m_exc;
#else
    PyObject* m_type = nullptr;
    PyObject* m_value = nullptr;
    PyObject* m_traceback = nullptr;
#endif
};

} // namespace pyust::hook::compat

namespace pyust::hook {

// The calling thread's kernel tid (LTTng's vtid). noexcept.
inline std::int64_t current_tid() noexcept
{
    return static_cast<std::int64_t>(PyThread_get_thread_native_id());
}

} // namespace pyust::hook
