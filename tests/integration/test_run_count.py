"""pyust run's summary counts the events that its processes counted themselves
(pyust.tally, src/hook/tally.hpp), without reading the trace again: the count
must be what the trace holds however the processes end."""

from __future__ import annotations

import re

from lttng_harness import count_trace, run_pyust

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
