"""pyust attach --kernel: the system calls of a process already running, in its Python
stacks, from the attach on."""

from __future__ import annotations

import bisect
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from pyusttest.environment import PYTHON, child_env, python_version
from pyusttest.run import run_pyust
from pyusttest.traces import folded

# The main thread writes 4 KiB ten times per round while the file GO exists, and says
# how many rounds it made when it is gone.
WRITER = """\
import os, sys, time

here = os.path.dirname(os.path.abspath(__file__))

def writer(fd):
    for i in range(10):
        os.write(fd, b"x" * 4096)

fd = os.open(os.path.join(here, "out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
print("ready", flush=True)
rounds = 0
while not os.path.exists(os.path.join(here, "END")):
    if os.path.exists(os.path.join(here, "GO")):
        writer(fd)
        rounds += 1
    else:
        time.sleep(0.002)
print(rounds, flush=True)
"""


def test_attach_records_the_system_calls_in_the_python_stack(tmp_path):
    """Every write(2) of writer() while attached ends a stack `...;__main__:writer;write`:
    as many as the program counts (ten per round)."""
    if os.geteuid() != 0:
        pytest.skip("kernel events need root: run this suite as root")
    if os.path.exists("/proc/lttng"):
        pytest.skip("lttng-modules is loaded: LTTng's kernel tracer records, not perf")
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (apt-get install linux-perf)")
    if python_version(PYTHON) < (3, 14) and shutil.which("gdb") is None:
        pytest.skip("attaching to Python 3.10 to 3.13 needs gdb (apt-get install gdb)")
    script = tmp_path / "prog.py"
    script.write_text(WRITER)
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    process = subprocess.Popen([PYTHON, str(script)], stdout=subprocess.PIPE, text=True,
                               env=environment)
    try:
        assert process.stdout.readline().strip() == "ready"
        trace = tmp_path / "trace"
        attach = subprocess.Popen([PYTHON, "-m", "pyust", "attach", str(process.pid), "-o",
                                   str(trace), "--kernel"], stderr=subprocess.PIPE, text=True,
                                  env=child_env())
        lines = []
        while not any("attached to process" in line for line in lines):
            line = attach.stderr.readline()
            assert line, "".join(lines) + attach.stderr.read()
            lines.append(line)
        (tmp_path / "GO").write_text("")
        time.sleep(0.5)
        (tmp_path / "GO").unlink()
        time.sleep(0.2)
        attach.send_signal(signal.SIGINT)
        err = attach.communicate(timeout=300)[1]
        assert attach.returncode == 0, err
        assert "system calls:" in err, err
        (tmp_path / "END").write_text("")
        rounds = int(process.communicate(timeout=60)[0])
    finally:
        if process.poll() is None:
            process.kill()
    assert rounds > 0
    result = run_pyust(["report", str(trace), "--pid", str(process.pid), "-f", "folded"])
    assert result.returncode == 0, result.stderr
    stacks = folded(result.stdout)
    writes = {stack: ns for stack, ns in stacks.items() if stack.endswith(";__main__:writer;write")}
    assert writes, sorted(stacks)
    chrome = run_pyust(["report", str(trace), "--pid", str(process.pid), "-f", "chrome",
                        "--max-size", "0"])
    assert chrome.returncode == 0, chrome.stderr
    events = [e for e in json.loads(chrome.stdout)["traceEvents"] if e.get("ph") == "X"]
    calls = [e for e in events if e["name"] == "__main__:writer"]
    assert len(calls) == rounds
    # (pyust's own two writes in the process, its answers to pyust attach, are not
    # in writer().) Each call holds its ten writes. A call may hold one more write(2)
    # that is not writer's: LTTng-UST wakes its consumer daemon with a one-byte write on
    # a pipe from the thread whose event fills a sub-buffer (once in 62,200 writes on
    # Debian 13): at most one per call, in a few calls.
    writes_at = {}
    for e in events:
        if e["name"] == "write":
            writes_at.setdefault(e["tid"], []).append(e["ts"])
    for times in writes_at.values():
        times.sort()
    per_call = [bisect.bisect_right(writes_at.get(c["tid"], []), c["ts"] + c["dur"])
                - bisect.bisect_left(writes_at.get(c["tid"], []), c["ts"]) for c in calls]
    assert min(per_call) == 10, sorted(set(per_call))
    assert max(per_call) <= 11, sorted(set(per_call))
    assert sum(per_call) - 10 * rounds <= max(1, rounds // 100), sum(per_call)
