"""Helpers of the `pyust attach` tests (tests/integration/test_attach.py,
tests/live/test_live.py): BUSY, a program whose threads count their own calls of
tick(), started as a user starts theirs (or as another, local user), and `pyust
attach` run against it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from pyusttest.environment import FAST, PYTHON, child_env

# A busy program: the main thread and two workers call tick() while the file GO
# exists, and each writes how many calls it made to COUNT-NAME when it stops.
# Every loop runs Python often (short sleeps), so pyust gets in at once.
BUSY = """\
import os, sys, threading, time

here = os.path.dirname(os.path.abspath(__file__))
GO = os.path.join(here, "GO")
counts = {}

def tick():
    return 1

def loop(name):
    n = 0
    reported = -1
    while not os.path.exists(os.path.join(here, "END")):
        if os.path.exists(GO):
            n += tick()
        else:
            if n != reported:
                with open(os.path.join(here, f"COUNT-{name}.part"), "w") as f:
                    f.write(str(n))
                os.replace(os.path.join(here, f"COUNT-{name}.part"),
                           os.path.join(here, f"COUNT-{name}"))
                reported = n
            time.sleep(0.002)

workers = [threading.Thread(target=loop, args=(f"w{i}",), name=f"worker-{i}") for i in range(2)]
for w in workers:
    w.start()
names_at_start = set(globals()) | {"names_at_start"}
print("ready", flush=True)
loop("main")
for w in workers:
    w.join()
print("globals", sorted(set(globals()) - names_at_start), flush=True)
print("modules", sorted(m for m in sys.modules if m.startswith("pyust")), flush=True)
print("threads", sorted(t.name for t in threading.enumerate()), flush=True)
print("end", flush=True)
"""

NAMES = ("main", "w0", "w1")


def start_program(tmp_path: Path, source: str, *extra_args, python=PYTHON,
                  env=None) -> subprocess.Popen:
    """The program, started as a user starts theirs (no pyust on its path); returns
    once it printed its first line."""
    script = tmp_path / "prog.py"
    script.write_text(source)
    environment = dict(env or os.environ)
    environment.pop("PYTHONPATH", None)
    environment.pop("PYUST", None)
    process = subprocess.Popen([python, *extra_args, str(script)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=environment,
                               cwd=tmp_path)
    first = process.stdout.readline()
    assert first.strip() == "ready", process.stderr.read() if process.poll() is not None else first
    return process


def start_users_program(user, source: str, *extra_args, python=PYTHON) -> subprocess.Popen:
    """The program, started as a user starts theirs, as the local user `user` (in its
    home, no pyust on its path); returns once it printed its first line."""
    script = user.home / "prog.py"
    script.write_text(source)
    os.chown(script, user.uid, user.gid)
    environment = dict(user.env)
    environment.pop("PYTHONPATH", None)
    process = user.spawn(python, str(script), *extra_args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=environment)
    first = process.stdout.readline()
    assert first.strip() == "ready", process.stderr.read() if process.poll() is not None else first
    return process


def start_attach(pid: int, output: Path | None, *args,
                 env: dict | None = None) -> subprocess.Popen:
    """`python -m pyust attach PID [-o OUTPUT] ARGS` (with --fast in the fast mode)."""
    command = [PYTHON, "-m", "pyust", "attach", str(pid), *args]
    command += ["-o", str(output)] if output else []
    if FAST:
        command.append("--fast")
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env or child_env())


def wait_attached(attach: subprocess.Popen, timeout: float = 60) -> str:
    """The attach's first lines up to "attached to process", which says it records."""
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = attach.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "attached to process" in line:
            return "".join(lines)
    attach.kill()
    raise AssertionError("pyust attach did not attach: " + "".join(lines) + attach.stderr.read())


def finish_attach(attach: subprocess.Popen) -> str:
    """Ends the recording with Ctrl-C's signal; the rest of attach's output."""
    attach.send_signal(signal.SIGINT)
    out, err = attach.communicate(timeout=120)
    assert attach.returncode == 0, err
    return err


def counts(tmp_path: Path) -> dict:
    return {name: int((tmp_path / f"COUNT-{name}").read_text()) for name in NAMES}


def wait_counts_settled(tmp_path: Path, before: dict | None) -> dict:
    """The per-thread counts once every thread wrote its count after the work."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            now = counts(tmp_path)
            if before is None or all(now[name] > before[name] for name in NAMES):
                return now
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError("the program's threads did not report their counts")


def window(tmp_path: Path, process: subprocess.Popen, seconds: float = 0.4) -> tuple:
    """One attach-work-detach window: (counts before, counts after, trace dir, attach's
    whole standard error)."""
    before = wait_counts_settled(tmp_path, None)
    output = tmp_path / f"trace-{time.monotonic_ns()}"
    attach = start_attach(process.pid, output)
    err = wait_attached(attach)
    (tmp_path / "GO").write_text("")
    time.sleep(seconds)
    (tmp_path / "GO").unlink()
    after = wait_counts_settled(tmp_path, before)
    err += finish_attach(attach)
    return before, after, output, err


def ticks_by_thread(trace, tmp_path: Path) -> dict:
    """Calls of tick() per thread name (python:thread names the threads)."""
    names = {}
    for event in trace.of("python:thread"):
        names[event["fields"]["tid"]] = event["fields"]["name"]
    codes = trace.codes
    tick = {i for i, c in codes.items() if c["qualname"] == "tick"}
    by_thread = {}
    for key, events in trace.threads().items():
        calls = sum(1 for e in events if e["name"] == "python:call" and e["fields"]["id"] in tick)
        by_thread[names.get(key[1], str(key[1]))] = calls
    return by_thread


THREAD_NAME = {"main": "MainThread", "w0": "worker-0", "w1": "worker-1"}


def end_program(tmp_path: Path, process: subprocess.Popen) -> str:
    (tmp_path / "END").write_text("")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert err == ""
    return out
