"""Fixtures of the native-frames suite: the example modules of cyg_profile/
built for the interpreter under test, and a session daemon."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, ROOT


class Examples:
    """The example modules built for the interpreter under test."""

    def __init__(self, path: Path, failed: dict):
        self.path = path
        self.failed = failed

    def need(self, *names: str) -> Path:
        """The directory, or a skip naming why a module could not be built."""
        for name in names:
            if name in self.failed:
                pytest.skip(f"{name} does not build for {PYTHON}: {self.failed[name]}")
        return self.path


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory) -> Examples:
    for tool in ("gcc", "g++", "cython3", "babeltrace2", "objdump"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup installs it)")
    out = tmp_path_factory.mktemp("examples")
    result = subprocess.run([PYTHON, str(ROOT / "cyg_profile" / "build_examples.py"),
                             "--keep-going", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    failed = {}
    for line in result.stdout.splitlines():
        name, _, status = line.partition(": ")
        if status == "FAILED":
            # Debian 12's Cython 0.29.32 predates Python 3.12's headers; the C and C++
            # modules have no such excuse.
            assert name in ("foo2", "foo3"), result.stdout + result.stderr
            failed[name] = "the C compiler failed on the Cython output (Cython too old?)"
    return Examples(out, failed)


@pytest.fixture
def examples(request, built_examples) -> Path:
    """The examples' directory; a test marked `needs("foo2", ...)` skips, with the reason,
    when one of those modules could not be built for the interpreter under test."""
    marker = request.node.get_closest_marker("needs")
    return built_examples.need(*(marker.args if marker else ()))


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(*modules): example modules the test needs")
