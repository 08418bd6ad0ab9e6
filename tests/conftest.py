"""Shared by every pytest suite under tests/: the integration harness
(tests/integration/lttng_harness.py) on the import path, and one session
daemon for the whole run (the running one, or one started here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "integration"))

from local_user import LocalUser, needs_local_user  # noqa: E402
from lttng_harness import lttng  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def sessiond():
    """A session daemon for the whole run: the one running, or one we start."""
    if lttng("list", check=False).returncode != 0:
        subprocess.run(["lttng-sessiond", "--daemonize"], check=True, timeout=60)
    yield


@pytest.fixture
def local_user():
    """A fresh unprivileged local user for one test, removed after it (skips where none
    can be made): the other user of issue 26's tests."""
    needs_local_user()
    user = LocalUser()
    try:
        yield user
    finally:
        user.close()
