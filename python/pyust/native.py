"""Native frames: what `python -m pyust cflags` prints and what `pyust run --native`
adds to the traced program and to its session.

Native frames come from GCC's -finstrument-functions: every instrumented function
calls __cyg_profile_func_enter/exit, which lttng-ust's preloadable
liblttng-ust-cyg-profile turns into lttng_ust_cyg_profile:func_entry/func_exit
events. liblttng-ust-dl records where each shared object is mapped (dlopen, and
a state dump at start), so that babeltrace2's flt.lttng-utils.debug-info can
name the functions. See cyg_profile/README.md.
"""

from __future__ import annotations

import ctypes.util
import sysconfig

try:
    from .lttng import LttngError
except ImportError:  # loaded by path, outside the package (cyg_profile/build_examples.py)
    LttngError = Exception

# The verbose library, not -fast: its func_exit names the function that
# returns (addr), so after lost events the analysis closes the right frame;
# its func_entry also carries call_site. The fast one's func_exit has no
# payload at all.
CYG_PROFILE_LIBRARY = "lttng-ust-cyg-profile"
DL_LIBRARY = "lttng-ust-dl"

# The events `run --native` enables in its native channel. The statedump and
# dl/lib events are what debug-info maps addresses to binaries with.
EVENTS = (
    "lttng_ust_cyg_profile:*",
    "lttng_ust_cyg_profile_fast:*",
    "lttng_ust_dl:*",
    "lttng_ust_lib:*",
    "lttng_ust_statedump:*",
)

# debug-info needs vpid and ip in the events' common context; for cyg-profile
# events lttng-ust records the instrumented function's address as ip. No procname, as
# on the python channel (pyust.lttng.CONTEXTS).
CONTEXTS = ("vpid", "vtid", "ip")

# Cython's own helpers are defined in the generated .c file itself: the
# __Pyx_ ones (__Pyx_PyObject_Call, __Pyx_GetItemInt, ...) and a few named
# __pyx_ like the module's functions (its code-object cache, used by every
# traceback; its function type, its metaclass, the module's GC slots; Cython
# 3.1 inlines the cache into __Pyx_AddTraceback). Excluding them keeps the
# module's functions (__pyx_pw_..., __pyx_pf_..., __pyx_f_...) and leaves out
# the plumbing (and the module object's creation, which runs before its code).
# GCC matches each as a substring of a function's name.
CYTHON_HELPERS = ("__Pyx_", "__pyx_pymod_create", "__pyx_find_code_object",
                  "__pyx__find_code_object", "__pyx_insert_code_object", "__pyx__insert_code_object",
                  "__pyx_bisect_code_objects", "__pyx_CyFunction_",
                  "__pyx_CommonTypesMetaclass_", "__pyx_m_clear", "__pyx_m_traverse")


class NativeError(LttngError):
    """Native tracing cannot be set up; the message says what to do."""


def python_include_dirs() -> list:
    """The directories of this interpreter's C headers (Python.h and the
    headers it includes), as sysconfig names them, without duplicates."""
    paths = sysconfig.get_paths()
    dirs = []
    for key in ("include", "platinclude"):
        path = paths.get(key)
        if path and path not in dirs:
            dirs.append(path)
    return dirs


def cflags(*, cython: bool = False, include_dirs: list | None = None) -> list:
    """The compiler flags that instrument a module's own functions and not the
    inline functions of CPython's (and the C library's) headers.

    -finstrument-functions-exclude-file-list matches substrings of the file a
    function is defined in: Py_INCREF, Py_DECREF, PyTuple_GET_SIZE... are
    static inline functions of the Python headers, and would otherwise be
    instrumented in every module that uses them (millions of events, and
    frames named after CPython's internals).
    """
    excluded = list(include_dirs if include_dirs is not None else python_include_dirs())
    if "/usr/include" not in excluded:
        excluded.append("/usr/include")
    flags = ["-finstrument-functions",
             "-finstrument-functions-exclude-file-list=" + ",".join(excluded)]
    if cython:
        flags.append("-finstrument-functions-exclude-function-list=" + ",".join(CYTHON_HELPERS))
    # Each function in one piece: GCC's hot/cold splitting (-O2 and up) moves a function's
    # unlikely paths to a FUNCTION.cold part elsewhere, and babeltrace2's debug-info then
    # names neither (Cython 3.1's functions under GCC 16: "module.so+0x6b20").
    flags.append("-fno-reorder-blocks-and-partition")
    # No -g: with DWARF, debug-info names a function by its DWARF name, which for C++ is the
    # bare name without namespace, class or parameters ("norm" for geometry::norm(Vec const&),
    # and overloads alike); from the symbol table it gives the mangled symbol, which pyust's
    # report demangles. (-g would add the source line, `src`, to babeltrace2's dumps.)
    return flags


def find_library(name: str) -> str:
    """The file name of lttng-ust's preloadable helper `name` (as ld.so finds
    it). Raises NativeError when it is not installed."""
    found = ctypes.util.find_library(name)
    if not found:
        raise NativeError(f"lib{name}.so is not installed: apt-get install liblttng-ust1 "
                          "(the preloadable helpers of lttng-ust)")
    return found


def preload_env(env: dict) -> dict:
    """env with liblttng-ust-dl and liblttng-ust-cyg-profile appended to its
    LD_PRELOAD (an existing LD_PRELOAD keeps its libraries, first).
    Raises NativeError when a library is missing."""
    libraries = [find_library(DL_LIBRARY), find_library(CYG_PROFILE_LIBRARY)]
    existing = [entry for entry in env.get("LD_PRELOAD", "").replace(":", " ").split() if entry]
    env = dict(env)
    env["LD_PRELOAD"] = ":".join(existing + [lib for lib in libraries if lib not in existing])
    return env
