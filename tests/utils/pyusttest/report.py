"""Helpers of the `pyust report` tests: trace fixed programs with `pyust run`, then
run `pyust report` on the traces, with the interpreter and package under test
(PYUST_TEST_PYTHON, PYUST_TEST_PATH: see pyusttest.environment, whose helpers
these reuse).

A session records every process that emits python:* events on the machine, so
each traced program is told apart by its pid: the process that registered code
from the program's file.
"""

from __future__ import annotations

import subprocess
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from pyusttest.environment import PYTHON, RUN_TIMEOUT, child_env
from pyusttest.traces import Trace, read_trace

# The bad-input cases must answer within this many seconds (issue 4).
BAD_INPUT_LIMIT = 10.0

FOO_BAR_BAZ = """\
def baz(): pass
def bar(): baz()
def foo(): bar()
foo()
"""


@dataclass
class Traced:
    """A program traced by `pyust run`."""

    program: Path
    path: Path  # the trace directory
    pid: int
    trace: Trace  # the events of the program's process only


def trace_program(directory: Path, source: str, *, name: str = "prog.py",
                  hook_flags: tuple = (), extra_files: dict | None = None) -> Traced:
    """Writes source (dedented) to directory/name, runs `pyust run -o` on it and
    reads the trace back; the program must exit with 0."""
    directory.mkdir(parents=True, exist_ok=True)
    for file_name, text in (extra_files or {}).items():
        (directory / file_name).write_text(textwrap.dedent(text))
    program = directory / name
    program.write_text(textwrap.dedent(source))
    path = directory / "trace"
    result = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", str(path), *hook_flags, "--",
                             str(program)], capture_output=True, text=True,
                            timeout=RUN_TIMEOUT, env=child_env(), cwd=directory)
    assert result.returncode == 0, result.stderr
    trace = read_trace(path, owner=directory)
    pids = {e["vpid"] for e in trace.events}
    assert len(pids) == 1, f"expected one process of {program} in the trace, got {pids}"
    return Traced(program=program, path=path, pid=pids.pop(), trace=trace)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def report(*args, timeout: float = 120, env: dict | None = None) -> Result:
    """`python -m pyust report ARGS` with the interpreter and package under test."""
    start = time.monotonic()
    result = subprocess.run([PYTHON, "-m", "pyust", "report", *map(str, args)],
                            capture_output=True, text=True, timeout=timeout,
                            env=env or child_env())
    return Result(result.returncode, result.stdout, result.stderr, time.monotonic() - start)


def ok(*args, **kwargs) -> str:
    """report(...) that must succeed; its standard output."""
    result = report(*args, **kwargs)
    assert result.returncode == 0, result.stderr
    return result.stdout


def profile_rows(text: str) -> dict:
    """The profile table -> {label: (ncalls, self_ms, total_ms)}."""
    rows = {}
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["ncalls"])
    for line in lines[header + 1:]:
        if not line.strip():
            break
        ncalls, self_ms, total_ms, _mean, label = line.split()[:5]
        rows[label] = (int(ncalls), float(self_ms), float(total_ms))
    return rows


def top_level_time(trace: Trace, vtid: int) -> int:
    """The time a thread spent in traced frames, from the raw events: the sum of
    the intervals during which its stack was not empty."""
    depth, begin, total = 0, None, 0
    for event in trace.events:
        if event["vtid"] != vtid:
            continue
        if event["name"] == "python:call":
            if depth == 0:
                begin = event["ts"]
            depth += 1
        elif event["name"] == "python:return" and depth > 0:
            depth -= 1
            if depth == 0:
                total += event["ts"] - begin
    assert depth == 0, "the thread's stack is not empty at the end"
    return total


def one_error_line(result: Result) -> str:
    """The single `pyust: error: ...` line of a failed run."""
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{result.stderr}"
    assert lines[0].startswith("pyust: error: "), lines[0]
    return lines[0]


__all__ = ["BAD_INPUT_LIMIT", "FOO_BAR_BAZ", "Traced", "trace_program", "report", "ok",
           "profile_rows", "top_level_time", "one_error_line"]
