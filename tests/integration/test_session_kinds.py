"""Traces that hold only part of a run (issue 7): a flight recorder's snapshot
(`pyust run --snapshot`), files rotated away (`--tracefile-size/--tracefile-count`),
and the chunks of `lttng rotate`. Their stacks start part-way: `pyust report`
rebuilds them, names the functions, and says in its "Incomplete:" section that
returns came without their calls."""

from __future__ import annotations

import re
import subprocess

from pyusttest.environment import PYTHON, RUN_TIMEOUT, child_env
from pyusttest.run import run_pyust
from pyusttest.sessions import Session, lttng
from pyusttest.traces import folded, read_trace

# outer() calls middle() 20 times, which calls leaf() 10,000 times: 200,000
# calls whose first ones a small flight recorder has long overwritten.
DEEP = """\
import os, sys
def leaf(i):
    return i
def middle(n):
    return sum(leaf(i) for i in range(n))
def outer():
    return sum(middle(10_000) for _ in range(20))
print(os.getpid(), outer())
sys.exit(4)
"""
UNMATCHED = "returns without a call (trace started mid-call)"


def _report(trace, pid, fmt="profile"):
    result = run_pyust(["report", str(trace), "--pid", str(pid), "--format", fmt,
                        "--timeout", "60"])
    assert result.returncode == 0, result.stderr
    return result


def _incomplete(text: str, pid: int) -> list:
    """The "Incomplete:" lines of process pid."""
    return [line.strip() for line in text.split("\nIncomplete:\n", 1)[-1].splitlines()
            if line.strip().startswith(f"pid {pid} ")] if "\nIncomplete:\n" in text else []


def _run_deep(make_program, tmp_path, *options):
    program = make_program(DEEP)
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), *options, "--", program])
    assert result.returncode == 4, result.stderr
    pid = int(result.stdout.split()[0])
    assert result.stdout.split()[1] == str(sum(range(10_000)) * 20)
    return out, pid, result


def _assert_starts_part_way(out, pid):
    profile = _report(out, pid).stdout
    unmatched = [line for line in _incomplete(profile, pid) if UNMATCHED in line]
    assert unmatched, profile
    # Names survive: python:code went to a channel that forgets nothing.
    leaf = re.search(r"^\s+(\d+)\s.*__main__:leaf\s", profile, re.M)
    assert leaf, profile
    assert 0 < int(leaf.group(1)) < 200_000
    assert "<unknown" not in profile
    result = _report(out, pid, "folded")
    stacks = folded(result.stdout)
    assert any(stack.endswith("__main__:leaf") for stack in stacks), stacks
    assert UNMATCHED in result.stderr


def test_snapshot_holds_the_latest_events_and_says_stacks_start_part_way(make_program, tmp_path):
    out, pid, result = _run_deep(make_program, tmp_path, "--snapshot", "--subbuf-size", "64k",
                                 "--num-subbuf", "2")
    summary = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(rf"pyust: snapshot \(the latest events\) in {re.escape(str(out))}: "
                        r"\d+ events recorded, \d+ discarded by LTTng; 1 process traced, "
                        r"\S+'s processes only",
                        summary), summary
    assert [p.name.startswith("snapshot-1-") for p in out.iterdir()] == [True]
    _assert_starts_part_way(out, pid)
    # The trace is well formed CTF that babeltrace2 reads in full.
    trace = read_trace(out)
    assert any(e["vpid"] == pid and e["name"] == "python:return" for e in trace.events)


def test_tracefile_count_keeps_the_last_files_and_says_stacks_start_part_way(make_program,
                                                                           tmp_path):
    """--no-discard: the program loses nothing in the buffers, only the files
    rotated away (other processes traced meanwhile may still lose events)."""
    out, pid, _ = _run_deep(make_program, tmp_path, "--subbuf-size", "64k",
                                 "--num-subbuf", "4", "--tracefile-size", "128k",
                                 "--tracefile-count", "2", "--no-discard")
    streams = [p.name for p in out.rglob("pyust_*") if p.is_file() and p.parent.name != "index"]
    assert streams and all(re.fullmatch(r"pyust_\d+_[01]", name) for name in streams), streams
    _assert_starts_part_way(out, pid)


ROTATED = """\
import os, sys
def leaf(i):
    return i
def phase():
    return sum(leaf(i) for i in range(1000))
def outer():
    phase()
    print(os.getpid(), flush=True)
    sys.stdin.readline()  # the test rotates the session here
    phase()
outer()
"""


def test_lttng_rotate_chunks_alone_and_together(make_program, tmp_path):
    """The plain-LTTng recipe: `lttng rotate` while the program runs. The last
    chunk alone starts part-way, and the report says so (its code was
    registered in the first chunk: named from its call events only); all chunks read together give
    balanced, named stacks."""
    program = make_program(ROTATED)
    session = Session(tmp_path)
    try:
        session.start()
        child = subprocess.Popen([PYTHON, "-m", "pyust", "--", program], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=child_env())
        pid = int(child.stdout.readline())
        lttng("rotate", session.name)
        child.communicate("\n", timeout=RUN_TIMEOUT)
        assert child.returncode == 0
        session.stop()
        lttng("rotate", session.name)
    finally:
        session.destroy()
    chunks = sorted((session.path / "archives").iterdir())
    assert len(chunks) == 2, chunks
    last = _report(chunks[-1], pid).stdout
    unmatched = [line for line in _incomplete(last, pid) if UNMATCHED in line]
    assert len(unmatched) == 1 and "(2)" in unmatched[0], last  # outer and <module>
    # leaf's registration is in the first chunk: it is named by its call events alone.
    assert re.search(r"^\s+1000\s.*\?:leaf\s+\(named by its call\)", last, re.M), last
    whole = _report(session.path, pid).stdout
    assert _incomplete(whole, pid) == [], whole
    assert re.search(r"^\s+2000\s.*__main__:leaf\s", whole, re.M), whole
    assert re.search(r"^\s+1\s.*__main__:outer\s", whole, re.M), whole
