"""Another local user's traced program never writes into `pyust run`'s trace (issue 26).

A root session daemon takes the registrations of every user's LTTng-UST programs, and pyust's
hook-only mode (`python -m pyust -- PROG`) wakes on any session that enables python:*: without
LTTng's vuid tracker, any user could feed root's traces and reports."""

from __future__ import annotations

import subprocess
import time

from pyusttest.environment import FAST, PYTHON
from pyusttest.run import run_pyust
from pyusttest.traces import read_trace

# Calls intruder() until killed, after saying it runs (its hook is dormant until a session
# enables python:*, then wakes within 50 ms).
INTRUDER = """\
import os, sys, time
def intruder():
    pass
print(os.getpid(), flush=True)
while True:
    intruder()
    time.sleep(0.001)
"""
# Runs 0.5 s: long enough for a dormant hook elsewhere on the machine to wake and record.
PROGRAM = """\
import time
def own():
    pass
deadline = time.monotonic() + 0.5
while time.monotonic() < deadline:
    own()
    time.sleep(0.002)
"""


def test_another_users_program_is_not_in_the_trace(local_user, tmp_path, make_program):
    script = local_user.home / "intruder.py"
    script.write_text(INTRUDER)
    script.chmod(0o644)
    flags = ["--fast"] if FAST else []
    intruder = local_user.spawn(PYTHON, "-m", "pyust", *flags, "--", script,
                                stdout=subprocess.PIPE, text=True)
    intruder_pid = int(intruder.stdout.readline())
    time.sleep(0.2)  # its LTTng-UST has registered with the root session daemon
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--", make_program(PROGRAM)])
    assert intruder.poll() is None, "the intruder ended early: the test proves nothing"
    assert result.returncode == 0, result.stderr
    assert "root's processes only" in result.stderr, result.stderr

    trace = read_trace(out)
    assert intruder_pid not in trace.pids(), "the other user's events are in root's trace"
    names = {code["qualname"] for code in trace.codes.values()}
    assert "own" in names and "intruder" not in names, names
    assert not (out / "ust" / "uid" / str(local_user.uid)).exists()
