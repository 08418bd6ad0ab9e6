# The extension of tests/bench/fullstack.py. step() (a def function) calls
# advance() (cdef), which calls the C helpers of fs_helper.c: fs_mix() and its
# fs_round() on every call, and fs_emit(), one write(2), on every `every`-th
# call. Built instrumented, that is five native frames per call (six with the
# write): __pyx_pw_..._step, __pyx_pf_..._step, __pyx_f_..._advance, fs_mix,
# fs_round (fs_emit).

from libc.stdint cimport int64_t, uint64_t

cdef extern from "fs_helper.h":
    uint64_t fs_mix(uint64_t state, int64_t value)
    int fs_emit(int fd, uint64_t state)


cdef uint64_t advance(uint64_t state, int64_t i, int fd, int64_t every) except? 0:
    state = fs_mix(state, i)
    if every > 0 and i % every == 0:
        if fs_emit(fd, state) != 17:
            raise OSError("fs_emit: the write failed")
    return state


def step(uint64_t state, int64_t i, int fd, int64_t every):
    """The next state after call i; writes a line to fd when i % every == 0."""
    return advance(state, i, fd, every)
