"""Helpers of the live-session tests (`pyust run --live`, `pyust top`): a relay daemon
of our own, the interpreter and package under test (PYUST_TEST_PYTHON,
PYUST_TEST_PATH: see pyusttest.environment, whose helpers these reuse),
and a `pyust run --live` running in the background.

Every babeltrace2 or `pyust top` run is bounded by a timeout; every session has a
unique name and is destroyed (by `pyust run` itself, or here if it was left).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, RUN_TIMEOUT, child_env, plugin_dir
from pyusttest.sessions import lttng, session_names, unique_name

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
        self.process.send_signal(signal.SIGCONT)  # a test may have stopped it
        end_process(self.process)


def end_process(process: subprocess.Popen) -> None:
    """Terminates process, killing it if it has not ended within 30 s."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def needs_network_namespaces() -> None:
    """Skips the calling test where it cannot make a network namespace (root, iproute2)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a network namespace for the relay daemon's host)")
    if shutil.which("ip") is None:
        pytest.skip("needs ip (apt-get install iproute2) for a network namespace")


class RelayHost:
    """An lttng-relayd on another host: a network namespace of its own, joined to this
    one by a veth pair (10.X.Y.1 here, 10.X.Y.2 there); cut() takes the link down, as a
    pulled cable does (the relay daemon runs on, unreachable). stop() removes the
    daemon, the namespace and both ends of the pair, whatever state they are in."""

    def __init__(self, directory: Path):
        tag = secrets.token_hex(3)
        self.netns, self.here, self.there = f"pyust-{tag}", f"pyh{tag}", f"pyr{tag}"
        subnet = f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(256)}"
        self.local, self.address = f"{subnet}.1", f"{subnet}.2"
        self.output = directory / "traces"
        self.process = None

    @property
    def url(self) -> str:
        return f"net://{self.address}"

    def _ip(self, *args, check=True) -> None:
        subprocess.run(["ip", *args], check=check, capture_output=True, timeout=30)

    def start(self) -> None:
        self._ip("netns", "add", self.netns)
        self._ip("link", "add", self.here, "type", "veth", "peer", "name", self.there,
                 "netns", self.netns)
        self._ip("addr", "add", f"{self.local}/30", "dev", self.here)
        self._ip("link", "set", self.here, "up")
        self._ip("-n", self.netns, "addr", "add", f"{self.address}/30", "dev", self.there)
        self._ip("-n", self.netns, "link", "set", self.there, "up")
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "lttng-relayd", "-o", str(self.output),
             "-C", f"tcp://{self.address}:5342", "-D", f"tcp://{self.address}:5343",
             "-L", f"tcp://{self.address}:5344"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + WAIT_TIMEOUT
        while not _connects(self.address, 5342):
            assert self.process.poll() is None, "lttng-relayd exited at start"
            assert time.monotonic() < deadline, "lttng-relayd does not listen"
            time.sleep(0.05)

    def cut(self) -> None:
        self._ip("-n", self.netns, "link", "set", self.there, "down")

    def stop(self) -> None:
        """Also when a session daemon still waits for the relay daemon (the test failed):
        the connections to it are destroyed (ss -K) or, where the kernel cannot, the
        link comes back so that TCP's next retransmission gets through."""
        subprocess.run(["ss", "-K", "dst", self.address], capture_output=True, timeout=30)
        self._ip("-n", self.netns, "link", "set", self.there, "up", check=False)
        if self.process is not None and self.process.poll() is None:
            end_process(self.process)
        self._ip("netns", "delete", self.netns, check=False)  # and the pair with it


def _connects(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def destroy_when_answered(name: str, timeout: float = 180) -> None:
    """Destroys session name, waiting (bounded) for a session daemon held up by a relay
    daemon that a failed test left unreachable."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if name not in session_names():
                return
            lttng("destroy", name, check=False, timeout=30)
        except subprocess.TimeoutExpired:
            pass


def plugin_path() -> list:
    """babeltrace2's --plugin-path for the plugin under test (pyusttest.environment.plugin_dir), or
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
