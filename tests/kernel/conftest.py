"""Fixtures of the kernel suite (`pyust run --kernel`): a session daemon, and
the programs it traces. Run as root with Debian's interpreter:

    sudo /usr/bin/python3 -m pytest tests/kernel

PYUST_TEST_PYTHON and PYUST_TEST_PATH choose the interpreter under test and
its pyust package, as for tests/integration (lttng_harness.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from lttng_harness import lttng  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def sessiond():
    """A session daemon for the whole run: the one running, or one we start."""
    if lttng("list", check=False).returncode != 0:
        subprocess.run(["lttng-sessiond", "--daemonize"], check=True, timeout=60)
    yield
