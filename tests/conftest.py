"""Shared by every pytest suite under tests/: one session daemon for the whole
run (the running one, or one started here), and a local user for a test that
needs one. The harness itself is the package pyusttest (tests/utils/pyusttest),
on the import path through pytest.ini."""

from __future__ import annotations

import subprocess

import pytest

from pyusttest.local_user import LocalUser, needs_local_user
from pyusttest.sessions import lttng


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
