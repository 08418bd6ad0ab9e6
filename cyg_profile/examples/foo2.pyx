# An instrumented Cython module (seed 004's foo2): outer() calls inner(), a cdef
# function, which calls helper_c() of helper.c, a plain C function that writes
# to a file. Built with `python3 -m pyust cflags --cython`, every function of
# this module and of helper.c becomes a native frame under `pyust run --native`.

cdef extern from "helper.h":
    int helper_c(const char *path, int value)


cdef int inner(bytes path, int value):
    return helper_c(path, value)


def outer(path, int count=1):
    """Calls inner() `count` times; returns the sum of what helper_c returned."""
    cdef bytes encoded = path.encode() if isinstance(path, str) else bytes(path)
    cdef int total = 0
    cdef int i
    for i in range(count):
        total += inner(encoded, i)
    return total
