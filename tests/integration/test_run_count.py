"""pyust run's summary counts the events that its processes counted themselves
(pyust.tally, src/hook/tally.hpp), without reading the trace again: the count
must be what the trace holds however the processes end."""

from __future__ import annotations

import re

from pyusttest.environment import child_env
from pyusttest.run import run_pyust
from pyusttest.sessions import slow_replies_library
from pyusttest.traces import count_trace, read_trace

# Every way a traced process can end: normally, through os._exit() in a forked child (no
# interpreter exit: atexit and the fast mode's final flush are skipped unless pyust wraps
# os._exit), killed by SIGKILL in a Python child, and a thread still running at exit.
ENDINGS = """\
import os, signal, subprocess, sys, threading, time

def f(n):
    return n

def busy(count):
    for i in range(count):
        f(i)

threading.Thread(target=busy, args=(3000,)).start()
busy(2000)
pid = os.fork()
if pid == 0:
    busy(1500)
    os._exit(3)
os.waitpid(pid, 0)
child = subprocess.run([sys.executable, "-c", "import os, signal\\n"
                        "def g(): pass\\n"
                        "for _ in range(700): g()\\n"
                        "os.kill(os.getpid(), signal.SIGKILL)"])
assert child.returncode == -signal.SIGKILL
subprocess.run([sys.executable, "-c", "def h(): pass\\nfor _ in range(900): h()"], check=True)
threading.Thread(target=busy, args=(100_000,), daemon=True).start()
time.sleep(0.05)
print("done")
"""


def _summary_counts(stderr: str) -> tuple:
    summary = stderr.strip().splitlines()[-1]
    match = re.search(r": (\d+) events recorded, (\d+) discarded by LTTng; (\d+) processes traced",
                      summary)
    assert match, stderr
    return tuple(int(group) for group in match.groups())


def test_summary_counts_what_the_trace_holds_however_processes_end(make_program, tmp_path):
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--", make_program(ENDINGS)])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    recorded, discarded, processes = _summary_counts(result.stderr)
    assert processes == 4
    assert discarded == 0
    counts, trace_discarded = count_trace(out)
    assert trace_discarded == 0
    # Every process's calls are there: the thread's, the fork's, the killed child's.
    assert counts["python:call"] > 3000 + 2000 + 1500 + 700 + 900
    assert recorded == sum(counts.values())


def test_summary_counts_the_trace_when_buffers_overflow_in_the_fast_mode(make_program,
                                                                         tmp_path):
    """LTTng counts a discarded batch as one event: the records that the trace holds are
    then counted in the trace."""
    out = tmp_path / "trace"
    program = make_program("def f(): pass\nfor _ in range(400_000): f()\n")
    result = run_pyust(["run", "--fast", "-o", str(out), "--subbuf-size", "4k",
                        "--num-subbuf", "2", "--", program])
    assert result.returncode == 0, result.stderr
    summary = result.stderr.strip().splitlines()
    recorded, discarded = map(int, re.search(r": (\d+) events recorded, (\d+) discarded",
                                             "\n".join(summary)).groups())
    assert discarded > 0  # batches were lost: the case this is about
    counts, _ = count_trace(out, expand=True)
    assert recorded == sum(counts.values())



# 1,000 calls at once, then a little more, in the program, a Python child and a forked child.
EARLY_AND_LATE = """\
import os, subprocess, sys, time

def early():
    pass

def late():
    time.sleep(0.05)

for _ in range(1000):
    early()
late()
subprocess.run([sys.executable, __file__, "child"] if sys.argv[1:] == [] else ["true"],
               check=True)
if sys.argv[1:] == []:
    pid = os.fork()
    if pid == 0:
        for _ in range(1000):
            early()
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_no_call_runs_before_the_session_records_it(make_program, tmp_path):
    """LTTng-UST registers with the session daemon in the background; with
    LTTNG_UST_REGISTER_TIMEOUT=0 it does not wait for that at all, and the session reached
    the program only after its first calls: none of the 1,000 early() calls was in the
    trace, and pyust run said nothing of it. Every traced process (the program, a Python
    child, a forked child) waits for the session before its first line."""
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--", make_program(EARLY_AND_LATE)],
                       env=child_env(LTTNG_UST_REGISTER_TIMEOUT="0"))
    assert result.returncode == 0, result.stderr
    assert "before the session recorded it" not in result.stderr
    trace = read_trace(out, tmp_path)
    early = {}
    for event in trace.of("python:call"):
        if event["fields"]["name"] == "early":
            early[event["vpid"]] = early.get(event["vpid"], 0) + 1
    assert sorted(early.values()) == [1000, 1000, 1000], result.stderr
    assert not trace.of("python:lost_start")


# Ends once the session records it: pyust says so (pyust._hook.lost_start()'s lost time).
LATE_SESSION = """\
import os, time
import pyust

def early():
    pass

def late():
    time.sleep(0.01)

print(os.getpid())
for _ in range(1000):
    early()
deadline = time.monotonic() + 60
while pyust._hook.lost_start()[1] == 0 and time.monotonic() < deadline:
    late()
"""


def test_a_start_the_session_missed_is_told(make_program, tmp_path):
    """When the session reaches a process only after the wait's bound (here LTTng-UST's
    every message from the session daemon is slowed down: its registration takes a second
    or more), the program runs anyway, and pyust run's summary and pyust report's
    Incomplete: section say which process ran how long unrecorded (before: nothing said)."""
    out = tmp_path / "trace"
    env = child_env(LTTNG_UST_REGISTER_TIMEOUT="0", LD_PRELOAD=slow_replies_library(tmp_path))
    result = run_pyust(["run", "--start-timeout", "0.1", "-o", str(out), "--",
                        make_program(LATE_SESSION)], env=env)
    assert result.returncode == 0, result.stderr
    pid = int(result.stdout)
    told = re.search(rf"pyust: process {pid} ran (\d+\.\d+) s before the session recorded it",
                     result.stderr)
    assert told, result.stderr
    assert float(told.group(1)) > 0
    lost = [e for e in read_trace(out, tmp_path).of("python:lost_start") if e["vpid"] == pid]
    assert len(lost) == 1 and lost[0]["fields"]["lost_ns"] > 0
    assert lost[0]["fields"]["waited_ns"] >= 100_000_000
    report = run_pyust(["report", str(out)])
    assert report.returncode == 0, report.stderr
    incomplete = report.stdout[report.stdout.index("\nIncomplete:\n"):]
    assert re.search(rf"\n  pid {pid} \(python3? .*prog\.py\): start not recorded \(the "
                     r"session recorded the process late\): its first \d", incomplete), \
        report.stdout
