"""LTTng sessions for the tests: the `lttng` command, unique session names, a real session
recording python:* as `pyust run` records its own (Session), and session daemons made slow to
answer or held at a session's set-up, for the tests of waiting.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from pathlib import Path

from pyusttest.environment import child_env
from pyusttest.traces import Trace, read_trace
# pyust is importable once pyusttest.environment put the package under test on the path.
from pyust import lttng as pyust_lttng

_counter = itertools.count()


def lttng(*args, check=True, timeout=120):
    result = subprocess.run(["lttng", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"lttng {' '.join(args)} failed: {result.stdout}{result.stderr}")
    return result


def session_names() -> set:
    """The names of this user's sessions, from LTTng's machine interface (`lttng --mi xml
    list`), whose schema holds across versions where its words for people do not."""
    import xml.etree.ElementTree as ElementTree

    result = lttng("--mi", "xml", "list", check=False)
    try:
        root = ElementTree.fromstring(result.stdout)
    except ElementTree.ParseError:
        return set()
    mi = "{https://lttng.org/xml/ns/lttng-mi}"
    return {node.findtext(mi + "name") for node in root.iter(mi + "session")}


def unique_name(tag: str = "t") -> str:
    return f"pyust-test-{os.getpid()}-{tag}-{next(_counter)}"


class Session(pyust_lttng.Session):
    """A real LTTng session recording python:* as `pyust run` does (pyust.lttng: its channel,
    the contexts vpid and vtid), into tmp_path/directory; read() keeps the test's programs
    (those of files under tmp_path). stop() and destroy() may be called again."""

    def __init__(self, tmp_path: Path, subbuf_size="4M", num_subbuf=8, directory="trace"):
        self.owner = tmp_path
        created = pyust_lttng.Session.create(unique_name(), str(tmp_path / directory))
        super().__init__(created.name, created.path)
        self.path = Path(created.path)
        self.active = True
        self.is_recording = False
        try:
            self.enable_python(pyust_lttng.ChannelConfig(subbuf_size, num_subbuf))
        except BaseException:
            self.destroy()
            raise

    def start(self):
        super().start()
        self.is_recording = True

    def stop(self):
        if self.is_recording:
            super().stop()
            self.is_recording = False

    def read(self, *, expand: bool | None = None) -> Trace:
        self.stop()
        return read_trace(self.path, self.owner, expand=expand)

    def destroy(self):
        if self.active:
            self.active = False
            super().destroy()


# pyust run's options that set its session up with `lttng` commands (create, then
# enable-channel, ...): without them `run -o DIR` sets it up through liblttng-ctl,
# with no process a wrapper could hold.
SETUP_BY_COMMANDS = ("--no-discard",)


def lttng_held_at_setup(tmp_path: Path, seconds: int) -> dict:
    """A child environment whose `lttng` holds pyust run's session set-up for
    `seconds` before `enable-channel` (run with SETUP_BY_COMMANDS). The file
    tmp_path/held appears when the hold starts; wait_held() waits for it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = subprocess.run(["sh", "-c", "command -v lttng"], capture_output=True,
                          text=True).stdout.strip()
    wrapper = bin_dir / "lttng"
    wrapper.write_text(f"#!/bin/sh\n"
                       f"[ \"$1\" = enable-channel ] && {{ touch {tmp_path}/held; sleep {seconds}; }}\n"
                       f"exec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    return child_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def wait_held(tmp_path: Path, timeout: float = 30.0) -> None:
    """Waits until lttng_held_at_setup's hold has started (or `timeout` passed)."""
    deadline = time.monotonic() + timeout
    while not (tmp_path / "held").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


# Delays every message LTTng-UST's threads receive from the session daemon by 50 ms.
_SLOW_REPLIES = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

ssize_t recvmsg(int fd, struct msghdr* message, int flags)
{
    static ssize_t (*real)(int, struct msghdr*, int);
    if (real == NULL)
        real = (ssize_t(*)(int, struct msghdr*, int))dlsym(RTLD_NEXT, "recvmsg");
    ssize_t received = real(fd, message, flags);
    if (syscall(SYS_gettid) != getpid()) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return received;
}
"""


def slow_replies_library(tmp_path: Path) -> str:
    """A library for LD_PRELOAD (built in tmp_path) that delays every message LTTng-UST's
    threads receive from the session daemon by 50 ms: the registration of a process, and a
    session's start in it, take seconds."""
    source = tmp_path / "slow_replies.c"
    source.write_text(_SLOW_REPLIES)
    library = tmp_path / "libslow_replies.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source), "-ldl"],
                   check=True)
    return str(library)
