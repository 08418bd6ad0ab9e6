# cython: profile=True
# A Cython module compiled with profiling (profile=True, and the C code with
# -DCYTHON_TRACE=1): its functions call the interpreter's profile hook, so pyust
# sees them as Python frames (python:call/return), no -finstrument-functions needed.

def inner(int x):
    return x * 2


def outer(int n):
    cdef int total = 0
    cdef int i
    for i in range(n):
        total += inner(i)
    return total
