"""Shared by every pytest suite under tests/: the integration harness
(tests/integration/lttng_harness.py) on the import path, and one session
daemon for the whole run (the running one, or one started here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "integration"))

from lttng_harness import lttng  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def sessiond():
    """A session daemon for the whole run: the one running, or one we start."""
    if lttng("list", check=False).returncode != 0:
        subprocess.run(["lttng-sessiond", "--daemonize"], check=True, timeout=60)
    yield
