"""Helpers of the live-session tests (`pyust run --live`, `pyust top`): a relay daemon
of our own, the interpreter and package under test (PYUST_TEST_PYTHON,
PYUST_TEST_PATH: see tests/integration/lttng_harness.py, whose helpers these reuse),
and a `pyust run --live` running in the background.

Every babeltrace2 or `pyust top` run is bounded by a timeout; every session has a
unique name and is destroyed (by `pyust run` itself, or here if it was left).
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from lttng_harness import (PYTHON, RUN_TIMEOUT, child_env, plugin_dir,  # noqa: E402
                           lttng, session_names, unique_name)

TOP_TIMEOUT = 30
WAIT_TIMEOUT = 30

# Runs until the file named by its first argument exists (at most 60 s); calls hot()
# and cold() in a loop and prints its pid, then the number of hot() calls.
LONG_RUNNING = """\
import os, sys, time

def hot(n):
    total = 0
    for i in range(n):
        total += i
    return total

def cold():
    time.sleep(0.002)

print(os.getpid(), flush=True)
calls = 0
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    hot(20000)
    calls += 1
    cold()
print(calls, flush=True)
"""


def free_ports(count: int) -> list:
    """count TCP ports of 127.0.0.1 free right now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def listens(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Relayd:
    """An lttng-relayd in the foreground (a child of the test run) on loopback."""

    def __init__(self, directory: Path):
        self.output = directory / "traces"
        self.control, self.data, self.live = free_ports(3)
        self.process = None

    @property
    def url(self) -> str:
        """What `pyust run --relayd` takes."""
        return f"net://127.0.0.1:{self.control}:{self.data}"

    @property
    def live_root(self) -> str:
        return f"net://127.0.0.1:{self.live}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["lttng-relayd", "-C", f"tcp://127.0.0.1:{self.control}",
             "-D", f"tcp://127.0.0.1:{self.data}", "-L", f"tcp://127.0.0.1:{self.live}",
             "-o", str(self.output)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + WAIT_TIMEOUT
        while not (listens(self.control) and listens(self.live)):
            assert self.process.poll() is None, "lttng-relayd exited at start"
            assert time.monotonic() < deadline, "lttng-relayd does not listen"
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def plugin_path() -> list:
    """babeltrace2's --plugin-path for the plugin under test (lttng_harness.plugin_dir), or
    nothing (the system's)."""
    directory = plugin_dir()
    return ["--plugin-path", directory] if directory else []


def pyust(*args, timeout: float = RUN_TIMEOUT, **kwargs) -> subprocess.CompletedProcess:
    """`python -m pyust ARGS` with the interpreter and package under test."""
    return subprocess.run([PYTHON, "-m", "pyust", *map(str, args)], env=child_env(),
                          capture_output=True, text=True, timeout=timeout, **kwargs)


class LiveRun:
    """`pyust run --live --relayd ...` of LONG_RUNNING, in the background."""

    def __init__(self, relay: Relayd, tmp_path: Path):
        self.name = unique_name("live")
        self.stop_file = tmp_path / "stop"
        self.program = tmp_path / "long_running.py"
        self.program.write_text(LONG_RUNNING)
        self.stderr_path = tmp_path / "run.stderr"
        self.stdout_path = tmp_path / "run.stdout"
        with open(self.stderr_path, "w") as err, open(self.stdout_path, "w") as out:
            self.process = subprocess.Popen(
                [PYTHON, "-m", "pyust", "run", "--live", "--relayd", relay.url,
                 "--live-port", str(relay.live), "--name", self.name, "--",
                 str(self.program), str(self.stop_file)],
                env=child_env(), stdout=out, stderr=err, text=True)

    def wait_for(self, pattern: str) -> re.Match:
        """The first match of pattern in the run's standard error, waiting for it."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        while True:
            match = re.search(pattern, self.stderr_path.read_text())
            if match:
                return match
            assert self.process.poll() is None, self.stderr_path.read_text()
            assert time.monotonic() < deadline, self.stderr_path.read_text()
            time.sleep(0.05)

    def pid(self) -> int:
        deadline = time.monotonic() + WAIT_TIMEOUT
        while not self.stdout_path.read_text().strip():
            assert time.monotonic() < deadline, "the program did not start"
            time.sleep(0.05)
        return int(self.stdout_path.read_text().split()[0])

    def finish(self) -> tuple:
        """Stops the program; (exit status, its stdout lines, pyust run's stderr)."""
        self.stop_file.write_text("")
        try:
            status = self.process.wait(timeout=RUN_TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            if self.name in session_names():
                lttng("destroy", self.name, check=False)
        return status, self.stdout_path.read_text().split(), self.stderr_path.read_text()
