"""Threads, os.fork(), ProcessPoolExecutor workers, signals and daemon threads at
interpreter exit, traced (issue 12): each run ends as it does untraced, with the same
output, and never hangs.

On CPython 3.11 a traced thread other than the main one spun at 100% CPU at a function's
first line once a signal arrived that only the main thread may handle (a worker's SIGCHLD)
while the main thread waited for that thread in a wait the signal does not interrupt
(asyncio's SA_RESTART handler): `test_asyncio`'s `test_get_event_loop_new_process` hung so.
Without the fix, the short case hung in 6 runs of 8 in the standard mode (none in the fast
mode, whose watcher took the GIL every 20 ms anyway).
A hang is a failure whose message holds faulthandler's dump of every thread."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from pyusttest.environment import FAST, PYTHON, child_env
from pyusttest.run import native_stacks

PROGRAM = """\
import asyncio
import concurrent.futures
import faulthandler
import multiprocessing
import os
import signal
import sys
import threading
import time

faulthandler.dump_traceback_later(float(sys.argv[2]), exit=True)


def leaf(i):
    return i * 2


def busy(seconds):
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        n += leaf(n) & 1
    return n


def joined_while_a_child_exits():
    # The main thread waits in join() for a thread that calls functions while a child the
    # main thread forked exits: SIGCHLD reaches the main thread, whose wait restarts
    # (SA_RESTART) without running Python.
    pid = os.fork()
    if pid == 0:
        time.sleep(0.05)
        os._exit(0)

    def work():
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            leaf(0)
        busy(0.05)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()


async def executor_shutdown():
    # test_asyncio's test_get_event_loop_new_process, with asyncio's SIGCHLD handler.
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGCHLD, lambda: None)
    try:
        # Fork, as the issue's hang had it (and the default before 3.14; 3.14's forkserver
        # would import this unguarded script again in each worker).
        with concurrent.futures.ProcessPoolExecutor(
                2, mp_context=multiprocessing.get_context("fork")) as pool:
            results = await asyncio.gather(*(loop.run_in_executor(pool, leaf, i)
                                             for i in range(8)))
    finally:
        loop.remove_signal_handler(signal.SIGCHLD)
    return sum(results)


def fork_and_wait(status):
    pid = os.fork()
    if pid == 0:
        busy(0.02)
        os._exit(status)
    _, waited = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(waited)


def forks_from_threads():
    statuses = []
    threads = [threading.Thread(target=lambda i=i: statuses.append(fork_and_wait(i)))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(statuses)


# As asyncio installs its handlers (add_signal_handler): SA_RESTART.
signal.signal(signal.SIGCHLD, lambda *a: None)
signal.siginterrupt(signal.SIGCHLD, False)
for _ in range(int(sys.argv[1])):
    for _ in range(5):
        joined_while_a_child_exits()
    print(asyncio.run(executor_shutdown()), forks_from_threads())
# Daemon threads still calling functions when the interpreter exits.
for _ in range(3):
    threading.Thread(target=busy, args=(60,), daemon=True).start()
time.sleep(0.05)
print("done")
"""


def run_within(argv: list, limit: float, env: dict) -> subprocess.CompletedProcess:
    """Runs argv in a session of its own; a run that outlives limit (faulthandler in the
    program ends it first, with its dump on standard error) fails with the native stacks of
    every process of the session (a forked child that hangs holds the pipes open), and the
    session is killed."""
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, start_new_session=True)
    try:
        out, err = child.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        stacks = native_stacks(child.pid)
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate(timeout=30)
        pytest.fail(f"hung for {limit:.0f} s: {' '.join(map(str, argv))}\n{err}\n{stacks}")
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # what the program left running
        except OSError:
            pass
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


@pytest.mark.parametrize("flags, runs, rounds", [
    ([], 1, 1),
    pytest.param([], 20, 3, marks=pytest.mark.stress),
    pytest.param(["--no-dormant"], 20, 3, marks=pytest.mark.stress),
], ids=["session", "session-stress", "no-dormant-stress"])
def test_threads_forks_and_executors_end_as_untraced(request, make_program, flags, runs,
                                                     rounds):
    """With a session recording (the hooks in), or with --no-dormant and no session of
    the test's (the hooks in, and on 3.11 the watcher started for them alone)."""
    if not flags:
        session = request.getfixturevalue("session")
        assert session.is_recording
    program = make_program(PROGRAM)
    # faulthandler in the program dumps every thread and exits 1 after hang_s.
    hang_s = 30 + 10 * rounds
    args = [program, str(rounds), str(hang_s)]
    env = child_env()
    plain = run_within([PYTHON, *args], hang_s + 60, env)
    expected = "".join(f"56 {list(range(4))}\n" for _ in range(rounds)) + "done\n"
    assert (plain.returncode, plain.stdout) == (0, expected), plain.stderr
    fast = ["--fast"] if FAST else []
    for run in range(runs):
        traced = run_within([PYTHON, "-m", "pyust", *flags, *fast, "--", *args], hang_s + 60,
                            env)
        assert (traced.returncode, traced.stdout) == (0, expected), \
            f"run {run + 1} of {runs}:\n{traced.stderr}"
