"""The fast mode (`--fast`): per-thread batches of records, read back through
filter.pyust.expand. The whole integration suite also runs in the fast mode
(PYUST_TEST_FAST=1, scripts/test does it); these tests check what is the
fast mode's own: that it records what the standard mode records, every exit
path, the time bound of a blocked thread's records, forks, and the clock."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from pyusttest.environment import PYTHON, RUN_TIMEOUT, child_env
from pyusttest.run import MILLION_EVENTS
from pyusttest.traces import Trace, count_trace, read_trace

MIXED = """\
import threading

def leaf(i):
    return i * 2

def fails():
    raise ValueError("x")

def catches():
    try:
        fails()
    except ValueError:
        return leaf(1)

def gen(n):
    for i in range(n):
        yield leaf(i)

def work(n):
    total = 0
    for i in range(n):
        total += leaf(i)
    total += catches()
    total += sum(gen(3))
    return total

def worker():
    work(300)

if __name__ == '__main__':
    t = threading.Thread(target=worker, name="worker")
    t.start()
    work(500)
    t.join()
"""


def run(program: str, *flags: str, check_status: int = 0, **kwargs):
    result = subprocess.run([PYTHON, "-m", "pyust", *flags, "--", program],
                            capture_output=True, text=True, timeout=RUN_TIMEOUT,
                            env=child_env(), **kwargs)
    assert result.returncode == check_status, result.stderr
    return result


def flows_by_thread(trace, program: str) -> list:
    """program_flow() of each thread, the main thread first, then by name."""
    names = {(e["vpid"], e["fields"]["tid"]): e["fields"]["name"]
             for e in trace.of("python:thread")}
    threads = trace.threads()
    order = sorted(threads, key=lambda key: (key[0] != key[1], names.get(key, "")))
    return [(names.get(key), trace.program_flow(program, threads[key])) for key in order
            if trace.program_flow(program, threads[key])]


def test_fast_mode_records_what_the_standard_mode_records(session, make_program):
    program = make_program(MIXED)
    run(program)
    run(program, "--fast")
    session.stop()
    everything = read_trace(session.path, session.owner, expand=True)
    pids = everything.pids()
    assert len(pids) == 2
    by_process = []
    for pid in pids:
        events = [e for e in everything.events if e["vpid"] == pid]
        by_process.append(flows_by_thread(Trace(events, 0), program))
    standard, fast = by_process
    assert [name for name, _ in standard] == ["MainThread", "worker"]
    assert fast == standard
    calls = sum(1 for step in fast[0][1] if step == ("call", "leaf"))
    assert calls == 500 + 1 + 3


def test_batches_are_what_is_in_the_raw_trace(session, make_program):
    program = make_program(MIXED)
    run(program, "--fast")
    session.stop()
    raw = read_trace(session.path, session.owner, expand=False)
    batches = raw.of("python:batch")
    assert batches, "no python:batch event"
    assert not raw.of("python:call", "python:return")
    horizons = raw.of("python:horizon")
    assert horizons[0]["fields"]["final"] == 0 and horizons[-1]["fields"]["final"] == 1
    assert horizons[0]["ts"] <= min(b["ts"] for b in batches)
    # Each thread's batches continue each other: no gap, no overlap.
    nexts = {}
    for batch in batches:
        fields = batch["fields"]
        tid = fields["tid"]
        assert fields["first"] == nexts.get(tid, fields["first"])
        nexts[tid] = fields["first"] + fields["count"]
    records = sum(b["fields"]["count"] for b in batches)
    expanded = read_trace(session.path, session.owner, expand=True)
    assert len(expanded.of("python:call", "python:return")) == records
    assert expanded.discarded == 0


EXITS = {
    "return": ("", 0),
    "sys.exit": ("import sys; sys.exit(4)", 4),
    "os._exit": ("import os; os._exit(3)", 3),
    "exception": ("raise SystemError('boom')", 1),
    "os.execv": ("import os; os.execv('/bin/sh', ['sh', '-c', 'exit 6'])", 6),
    "os.execlp": ("import os; os.execlp('sh', 'sh', '-c', 'exit 7')", 7),
    "os._exit in a thread": ("import os, threading\n"
                             "t = threading.Thread(target=lambda: os._exit(5)); t.start(); t.join()",
                             5),
}


@pytest.mark.parametrize("how", sorted(EXITS))
def test_every_record_is_written_whatever_the_exit(session, make_program, how):
    code, status = EXITS[how]
    program = make_program(
        "def work(i):\n    return i\n\nfor i in range(2000):\n    work(i)\n" + code + "\n")
    run(program, "--fast", check_status=status)
    trace = session.read(expand=True)
    flow = trace.program_flow(program)
    assert flow.count(("call", "work")) == 2000
    assert flow.count(("return", "work", 0)) == 2000


def test_a_blocked_thread_records_reach_the_trace_before_sigkill(session, make_program):
    """The session watcher writes a blocked thread's batch within its flush
    period: a SIGKILL 0.5 s after the work loses nothing of it."""
    program = make_program("""\
        import sys, threading, time

        def work(i):
            return i

        def worker():
            for i in range(1000):
                work(i)
            print("done", flush=True)
            time.sleep(60)

        threading.Thread(target=worker, daemon=True).start()
        time.sleep(60)
    """)
    child = subprocess.Popen([PYTHON, "-m", "pyust", "--fast", "--", program],
                             stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert child.stdout.readline() == "done\n"
        time.sleep(0.5)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=RUN_TIMEOUT)
    trace = session.read(expand=True)
    assert trace.program_flow(program).count(("call", "work")) == 1000


def test_forked_children_records(session, make_program):
    program = make_program("""\
        import os, multiprocessing

        def child_work(i):
            return i

        def in_pool(i):
            return child_work(i)

        if __name__ == '__main__':
            pid = os.fork()
            if pid == 0:
                for i in range(100):
                    child_work(i)
                os._exit(0)
            os.waitpid(pid, 0)
            # close() and join(): the workers exit, writing their records. (Leaving a
            # `with Pool()` block terminates them with SIGTERM, which loses up to their
            # last 20 ms of records: see doc/fast-mode-and-dormant.md.)
            pool = multiprocessing.get_context("fork").Pool(2)
            assert sum(pool.map(in_pool, range(50))) == sum(range(50))
            pool.close()
            pool.join()
    """)
    run(program, "--fast")
    trace = session.read(expand=True)
    pids = {e["vpid"] for e in trace.of("python:call")}
    assert len(pids) >= 3  # the parent, the forked child, and at least one pool worker
    flow = trace.program_flow(program)
    assert flow.count(("call", "child_work")) == 150
    assert flow.count(("call", "in_pool")) == 50


def test_record_times_agree_with_lttngs_clock(session, make_program):
    """C calls stay standard events (LTTng's own timestamps) in the fast mode:
    every one must fall between the records of the Python frame around it,
    which bounds the error of the records' clock conversion."""
    program = make_program("""\
        def caller(x):
            return len(x)

        for i in range(3000):
            caller("abc")
    """)
    run(program, "--fast", "--c-calls")
    trace = session.read(expand=True)
    codes = trace.codes
    margins = []
    open_call = c_call = None
    for e in trace.events:
        name = e["name"]
        if name == "python:call" and codes[e["fields"]["id"]]["qualname"] == "caller":
            open_call = e["ts"]
        elif name == "python:c_call" and e["fields"]["name"] == "len" and open_call is not None:
            c_call = e["ts"]
        elif name == "python:return" and c_call is not None and \
                codes[e["fields"]["id"]]["qualname"] == "caller":
            margins.append(min(c_call - open_call, e["ts"] - c_call))
            open_call = c_call = None
    assert len(margins) == 3000
    # Every C call is strictly inside its caller's call and return records.
    assert min(margins) > 0, sorted(margins)[:10]
    print(f"clock check: {len(margins)} C calls, smallest margin {min(margins)} ns, "
          f"median {sorted(margins)[len(margins) // 2]} ns")


def test_lost_batches_are_counted_in_records(make_program, tmp_path):
    """Half a million calls into two 4 KiB sub-buffers in the fast mode: LTTng
    discards many batches. Each thread numbers its records, so the gaps
    between the batches that were recorded count the records lost there
    exactly; batches lost after a thread's last recorded one have no later
    batch to reveal them (LTTng's own discarded-events count covers them)."""
    program = make_program(MILLION_EVENTS)
    # Whether LTTng discards depends on its consumer falling behind, which it nearly always
    # does here; a run it kept up with (once in CI) proves nothing: record again.
    for attempt in range(3):
        out = tmp_path / f"trace-{attempt}"
        result = subprocess.run([PYTHON, "-m", "pyust", "run", "--fast", "-o", str(out),
                                 "--subbuf-size", "4k", "--num-subbuf", "2", "--", program],
                                capture_output=True, text=True, timeout=RUN_TIMEOUT,
                                env=child_env())
        assert result.returncode == 0, result.stderr
        emitted = int(result.stderr.splitlines()[0])
        assert emitted > 1_000_000
        raw = read_trace(out, tmp_path, expand=False)
        if raw.discarded > 0:
            break
    batches = raw.of("python:batch")
    recorded = sum(b["fields"]["count"] for b in batches)
    gaps = 0
    next_first = {}
    for batch in batches:
        fields = batch["fields"]
        # The program's threads all start recording in this session: from 0.
        expected = next_first.get(fields["tid"], 0)
        assert fields["first"] >= expected
        gaps += fields["first"] - expected
        next_first[fields["tid"]] = fields["first"] + fields["count"]
    assert raw.discarded > 0 and gaps > 0
    assert recorded + gaps <= emitted, (emitted, recorded, gaps)
    # Expanded, the trace holds exactly the recorded records, and says how
    # many were lost at each gap.
    # (Counted whole: the expanded records of every process the session recorded.)
    counts, discarded = count_trace(out, expand=True)
    recorded_by_all = sum(b["fields"]["count"] for b in read_trace(out, expand=False).events
                          if b["name"] == "python:batch")
    assert counts.get("python:call", 0) + counts.get("python:return", 0) == recorded_by_all
    assert discarded >= gaps
    # And the report says its stacks are incomplete there.
    report = subprocess.run([PYTHON, "-m", "pyust", "report", str(out), "--format", "profile"],
                            capture_output=True, text=True, timeout=RUN_TIMEOUT, env=child_env())
    assert report.returncode == 0, report.stderr
    assert "Incomplete:" in report.stdout and "discarded" in report.stdout, report.stdout[-2000:]
