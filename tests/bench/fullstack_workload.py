"""The workload of fullstack.py, one run, timed from inside:

    PYTHON fullstack_workload.py EXT_DIR ITERATIONS EVERY

A Python loop calls a Python function, call(), ITERATIONS times; call() calls
fullstack_ext.step() (Cython, imported from EXT_DIR), which calls C helpers and,
on every EVERY-th call, writes 17 bytes to /dev/null with write(2). So each
iteration makes one Python call (two python:* events when traced), five native
frames when the extension is instrumented (ten cyg-profile events under
`pyust run --native`), and every EVERY-th one a system call.

The loop is warmed up first (a hundredth of the run), then timed alone with
time.perf_counter and time.thread_time. Prints one line, `PYUST-BENCH {json}`,
with the times, the final state (the same in every mode: the checksum), the
writes made, and under pyust the events its hook handed to LTTng.
"""

from __future__ import annotations

import json
import os
import sys
import time

SEED = 0x2545F4914F6CDD1D
WARM_UP_FRACTION = 0.01


def call(state: int, i: int, fd: int, every: int) -> int:
    return fullstack_ext.step(state, i, fd, every)


def loop(iterations: int, fd: int, every: int) -> int:
    state = SEED
    for i in range(iterations):
        state = call(state, i, fd, every)
    return state


def main(argv: list) -> int:
    global fullstack_ext
    ext_dir, iterations, every = argv[0], int(argv[1]), int(argv[2])
    sys.path.insert(0, ext_dir)
    import fullstack_ext

    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        loop(max(1, int(iterations * WARM_UP_FRACTION)), fd, every)
        pyust = sys.modules.get("pyust")
        emitted_before = pyust.emitted_events() if pyust else 0
        t0, c0 = time.perf_counter(), time.thread_time()
        checksum = loop(iterations, fd, every)
        t1, c1 = time.perf_counter(), time.thread_time()
        emitted_after = pyust.emitted_events() if pyust else 0
    finally:
        os.close(fd)
    result = {
        "pid": os.getpid(),
        "seconds": t1 - t0,
        "cpu_seconds": c1 - c0,
        "checksum": checksum,
        "writes": (iterations + every - 1) // every if every > 0 else 0,
        "extension": fullstack_ext.__file__,
    }
    if pyust:
        result["emitted"] = emitted_after
        result["emitted_in_window"] = emitted_after - emitted_before
    print("PYUST-BENCH " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
