"""Fixtures of the `pyust report` tests (helpers: report_harness.py)."""

from __future__ import annotations

import subprocess

import pytest

from report_harness import FOO_BAR_BAZ, trace_program

from lttng_harness import lttng


@pytest.fixture(scope="session", autouse=True)
def sessiond():
    """A session daemon for the whole run: the one running, or one we start."""
    if lttng("list", check=False).returncode != 0:
        subprocess.run(["lttng-sessiond", "--daemonize"], check=True, timeout=60)
    yield


@pytest.fixture(scope="session")
def foo_bar_baz(tmp_path_factory):
    """The foo/bar/baz program, traced once for the whole run."""
    return trace_program(tmp_path_factory.mktemp("foo_bar_baz"), FOO_BAR_BAZ)
