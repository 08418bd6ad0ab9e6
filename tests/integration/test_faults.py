"""Faults and load (issue 7, the quick ones): fork storms, asyncio at scale,
and loss accounting that never lies."""

from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest

from pyusttest.environment import FAST, PYTHON, child_env
from pyusttest.run import MILLION_EVENTS, default_sigint, run_hooked, run_pyust
from pyusttest.traces import assert_balanced, read_trace


def test_fork_storm_with_a_busy_thread(session, make_program):
    """A thread in a hot loop while the main thread forks 200 times: no
    deadlock in the fork protocol, every child exits 0, every child records."""
    program = make_program("""\
        import os, threading
        stop = False
        def spin():
            while not stop:
                sum(range(50))
        def child_work(i):
            return i * 2
        worker = threading.Thread(target=spin, daemon=True)
        worker.start()
        statuses = []
        for i in range(200):
            pid = os.fork()
            if pid == 0:
                child_work(i)
                os._exit(0)
            statuses.append(os.waitpid(pid, 0)[1])
        stop = True
        worker.join()
        print(sum(1 for s in statuses if s == 0))
        """)
    # Each child registers with the session daemon before it runs on; under load an answer
    # can take longer than LTTng-UST's default wait of 3 s, after which the child would run
    # unregistered and its events be lost.
    result = run_hooked([program], env=child_env(LTTNG_UST_REGISTER_TIMEOUT="30000"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "200\n"
    trace = session.read()
    # The children's pids can be smaller than the parent's: they wrap around at pid_max
    # (twice in CI, a child taken for the parent: "199 == 200").
    parent = trace.pids()[0]
    assert any(e["fields"]["name"] == "spin" for e in trace.of("python:call")
               if e["vpid"] == parent)
    children = {e["vpid"] for e in trace.of("python:call") if e["fields"]["name"] == "child_work"}
    assert parent not in children
    assert len(children) == 200


def test_asyncio_200_tasks_with_cancellation_and_timeouts(session, make_program):
    """200 tasks, some cancelled, some timed out: every thread's events
    balance, and each coroutine frame closes the frame it opened (no frame of
    one task is ever closed inside another's)."""
    program = make_program("""\
        import asyncio
        async def leaf(i):
            await asyncio.sleep(0.001 * (i % 5))
            return i
        async def task(i):
            if i % 7 == 0:
                await asyncio.sleep(10)  # cancelled below
            if i % 11 == 0:
                try:
                    await asyncio.wait_for(asyncio.sleep(10), 0.001)
                except asyncio.TimeoutError:
                    pass
            return await leaf(i)
        async def main():
            tasks = [asyncio.create_task(task(i)) for i in range(200)]
            await asyncio.sleep(0.01)
            for i, t in enumerate(tasks):
                if i % 7 == 0:
                    t.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            return sum(1 for r in results if isinstance(r, asyncio.CancelledError))
        print(asyncio.run(main()))
        """)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "29\n"  # 0, 7, ..., 196
    trace = session.read()
    for events in trace.threads().values():
        assert_balanced(trace, events)
    task_calls = [e for e in trace.of("python:call") if e["fields"]["name"] == "task"]
    assert len(task_calls) >= 200


@pytest.mark.skipif(FAST, reason="LTTng counts one discarded event per batch in the fast mode; "
                    "test_fast.py::test_lost_batches_are_counted_in_records checks its accounting")
def test_loss_accounting_recorded_plus_discarded_equals_emitted(make_program, tmp_path):
    """A million events into two 4 KiB sub-buffers: LTTng discards most of
    them, and the events recorded plus those LTTng counted as discarded are
    exactly the events the hook emitted. (Assumes no other traced process runs
    meanwhile: a session records them all.)"""
    program = make_program(MILLION_EVENTS)
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--subbuf-size", "4k", "--num-subbuf", "2",
                        "--", program])
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    emitted = int(lines[0])
    summary = next(line for line in lines if line.startswith("pyust: trace in"))
    recorded, discarded = map(int, re.search(
        r": (\d+) events recorded, (\d+) discarded by LTTng", summary).groups())
    assert emitted > 1_000_000
    # How much is lost depends on how fast the consumer daemon drains the buffers (about half
    # here, 49-60%): that some is, is what the case needs.
    assert discarded > emitted // 100
    assert recorded + discarded == emitted
    # The trace says the same: babeltrace2's discarded-events messages.
    trace = read_trace(out)
    assert len(trace.events) == recorded
    assert trace.discarded == discarded


def test_50000_deep_recursion_in_a_thread_with_a_big_stack(session, make_program):
    program = make_program("""\
        import sys, threading
        sys.setrecursionlimit(60_000)
        threading.stack_size(512 * 1024 * 1024)
        def down(n):
            return 0 if n == 0 else 1 + down(n - 1)
        result = []
        t = threading.Thread(target=lambda: result.append(down(50_000)))
        t.start()
        t.join()
        print(result)
        """)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[50000]\n"
    trace = session.read()
    downs = [e for e in trace.of("python:call") if e["fields"]["name"] == "down"]
    assert len(downs) == 50_001
    for events in trace.threads().values():
        assert_balanced(trace, events)


def test_multiprocessing_spawn_and_forkserver(session, make_program):
    """Children started by spawn and forkserver are fresh interpreters: they
    run as untraced, and the traced parent is unaffected."""
    program = make_program("""\
        import multiprocessing as mp
        def square(x):
            return x * x
        if __name__ == "__main__":
            for method in ("spawn", "forkserver"):
                with mp.get_context(method).Pool(2) as pool:
                    print(method, sum(pool.map(square, range(10))))
        """)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "spawn 285\nforkserver 285\n"
    trace = session.read()
    parent = trace.pids()[0]
    for (vpid, _), events in trace.threads().items():
        if vpid == parent:
            assert_balanced(trace, events, closed=False)


def test_names_from_the_trace_cannot_drive_a_terminal(make_program, tmp_path):
    """A code object renamed with escape sequences and a newline: the
    reports print them escaped, and the folded format keeps one stack a line."""
    program = make_program("""\
        def f():
            return 1
        name = "evil\\x1b[31mred\\nline;x"
        fields = {"co_qualname": name} if hasattr(f.__code__, "co_qualname") else {}
        f.__code__ = f.__code__.replace(co_name=name, **fields)
        f()
        """)
    out = tmp_path / "trace"
    assert run_pyust(["run", "-o", str(out), "--", program]).returncode == 0
    # Every path of the tree, however short: the renamed call is one of them.
    for fmt, whole in (("profile", []), ("tree", ["--min-share", "0"]), ("folded", [])):
        result = run_pyust(["report", str(out), "--format", fmt, "--modules", "__main__", *whole])
        assert result.returncode == 0, result.stderr
        assert "\x1b" not in result.stdout
        assert "evil\\x1b[31mred\\x0aline\\x3bx" in result.stdout
    folded = run_pyust(["report", str(out), "--format", "folded", "--modules", "__main__"])
    assert all(re.fullmatch(r"\S+ \d+", line) for line in folded.stdout.splitlines())


def test_argument_and_return_values_are_never_recorded(make_program, tmp_path):
    """With every event on (C calls, lines), no argument, local or return value reaches the
    trace: the bytes of the trace directory hold none of them, though the calls are there."""
    program = make_program("""\
        import json
        def login(user, password):
            token = password[::-1] + "-tok"
            return json.dumps({"user": user, "token": token})
        print(len(login("alice", "hunter2-SECRET-PW")))
        """)
    out = tmp_path / "trace"
    run = run_pyust(["run", "--c-calls", "--lines", "-o", str(out), "--", program])
    assert run.returncode == 0, run.stderr
    data = b"".join(f.read_bytes() for f in out.rglob("*") if f.is_file())
    assert b"login" in data and b"dumps" in data  # the calls are recorded, by name
    for value in (b"alice", b"hunter2", b"SECRET", b"WP-TERCES", b"-tok"):
        assert value not in data


SIGNALLED = """\
import sys
def hot():
    n = 0
    while True:
        n += len(str(n))
print("ready", flush=True)
try:
    hot()
except KeyboardInterrupt:
    print("first interrupt", flush=True)
hot()
"""


@pytest.mark.parametrize("signals", [
    (signal.SIGINT, signal.SIGINT), (signal.SIGTERM,), (signal.SIGKILL,)],
    ids=["SIGINT twice", "SIGTERM", "SIGKILL"])
def test_signals_in_a_hot_loop_end_it_as_untraced(session, make_program, signals):
    program = make_program(SIGNALLED)

    def run(command):
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=child_env(), preexec_fn=default_sigint)
        try:
            assert child.stdout.readline() == "ready\n"
            for number, sig in enumerate(signals):
                time.sleep(0.2)
                child.send_signal(sig)
                if number == 0 and len(signals) > 1:
                    assert child.stdout.readline() == "first interrupt\n"
            child.wait(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        return child.returncode, child.stdout.read(), child.stderr.read()

    plain = run([PYTHON, program])
    traced = run([PYTHON, "-m", "pyust", "--", program])
    assert traced[0] == plain[0] == -signals[-1]
    assert traced[1] == plain[1]
    # The traceback of the second KeyboardInterrupt goes through the same
    # functions (the line in the loop depends on when the signal lands).
    def functions(stderr):
        return re.findall(r'File "[^"]*", line \d+, in (\S+)', stderr)

    assert functions(traced[2]) == functions(plain[2])
