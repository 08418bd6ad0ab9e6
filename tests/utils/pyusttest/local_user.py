"""A local user made for one test and removed after it: the other, unprivileged
user that root's pyust must never act for (issue 26). The attacker's side of a
test runs as this user (setpriv), with a home of its own.

    def test_x(local_user):                       # the fixture (tests/conftest.py)
        local_user.run(...)
    with LocalUser() as mallory:
        mallory.run(PYTHON, "-c", "...")          # as the user, in its home
        mallory.spawn(...)                        # a Popen, killed at close

`needs_local_user()` skips a test, saying why, where users cannot be made
(not root, no useradd or setpriv, the build not readable by others).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, PYUST_PATH, RUN_TIMEOUT, child_env


def _readable_by_others(path: str) -> bool:
    return os.access(path, os.R_OK) and all(
        os.stat(parent).st_mode & 0o001 for parent in Path(path).resolve().parents)


def needs_local_user() -> None:
    """Skips the calling test where a local user cannot be made and used."""
    if os.geteuid() != 0:
        pytest.skip("needs root (to make a local user and act as it)")
    for tool in ("useradd", "userdel", "setpriv"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} to make a local user")
    for path in (PYTHON, PYUST_PATH):
        if not _readable_by_others(path):
            pytest.skip(f"{path} is not readable by other users")


class LocalUser:
    """A new user `pyust-tXXXXXX` with its own group and home (0700 under /home
    or wherever useradd puts it); close() kills its processes and removes it."""

    def __init__(self):
        self.name = "pyust-t" + secrets.token_hex(3)
        subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh",
                        self.name], check=True, capture_output=True, timeout=60)
        entry = pwd.getpwnam(self.name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.home = Path(entry.pw_dir)
        self.env = child_env(HOME=str(self.home), LTTNG_HOME=str(self.home), USER=self.name,
                             LOGNAME=self.name)
        self._children = []

    def argv(self, *argv) -> list:
        """argv run as this user (real and effective ids, no supplementary group)."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                *map(str, argv)]

    def run(self, *argv, env=None, cwd=None, timeout=RUN_TIMEOUT, **kwargs):
        """Runs argv as this user, in its home unless cwd; a CompletedProcess (text)."""
        return subprocess.run(self.argv(*argv), capture_output=True, text=True, timeout=timeout,
                              env=env or self.env, cwd=cwd or self.home, **kwargs)

    def spawn(self, *argv, env=None, cwd=None, **kwargs) -> subprocess.Popen:
        """Starts argv as this user; killed (if still running) at close()."""
        child = subprocess.Popen(self.argv(*argv), env=env or self.env, cwd=cwd or self.home,
                                 **kwargs)
        self._children.append(child)
        return child

    def python(self, code: str, **kwargs):
        """Runs Python code as this user with the interpreter under test."""
        return self.run(PYTHON, "-c", code, **kwargs)

    def close(self) -> None:
        for child in self._children:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=30)
        # Whatever else it left running (a session daemon, a relay daemon, a late child).
        subprocess.run(["pkill", "-KILL", "-u", str(self.uid)], capture_output=True, timeout=30)
        for _ in range(50):
            if subprocess.run(["pgrep", "-u", str(self.uid)], capture_output=True,
                              timeout=30).returncode != 0:
                break
            time.sleep(0.1)
        subprocess.run(["userdel", "--remove", self.name], capture_output=True, timeout=60)

    def __enter__(self) -> "LocalUser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
