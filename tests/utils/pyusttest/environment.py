"""The system under test, and how a test runs a part of it: the interpreter and the pyust package
under test, the babeltrace2 plugin, the recording mode, and the environment of a child process
that runs them. Every other module of pyusttest builds on these.

Environment:
  PYUST_TEST_PYTHON  the interpreter under test (default: this one)
  PYUST_TEST_PATH    where its `pyust` package is (default: build/python)
  PYUST_TEST_FAST    1: trace in the fast mode (`--fast`) and read traces
                     through filter.pyust.expand, so that every test checks
                     that the fast mode records what the standard mode does
  PYUST_PLUGIN_PATH  where pyust's babeltrace2 plugin is, as for pyust report
                     (default: the src/plugin of the build whose python/ is
                     PYUST_TEST_PATH, else babeltrace2's system directory)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYTHON = os.environ.get("PYUST_TEST_PYTHON", sys.executable)
PYUST_PATH = os.path.abspath(os.environ.get("PYUST_TEST_PATH", str(ROOT / "build" / "python")))
# bt2 comes from Debian's python3-bt2: read traces with Debian's interpreter.
READER = "/usr/bin/python3"
READ_TIMEOUT = 120
RUN_TIMEOUT = 120
FAST = os.environ.get("PYUST_TEST_FAST") == "1"

# The package under test's session control and plugin search (plain Python: importable here
# whatever the interpreter under test), so that the tests' sessions are made, and the plugin
# found, as pyust's own commands do (pyusttest.sessions imports pyust.lttng after this module).
sys.path.insert(0, PYUST_PATH)
from pyust import babeltrace as pyust_babeltrace  # noqa: E402


def plugin_dir() -> str:
    """pyust's babeltrace2 plugin directory, the one every test uses ("": babeltrace2's
    system one), found as pyust report finds it (pyust.babeltrace.plugin_dirs): the first
    of PYUST_PLUGIN_PATH, else the plugin built beside the package under test
    (BUILD/src/plugin for BUILD/python)."""
    found = pyust_babeltrace.plugin_dirs()
    return found[0] if found else ""


def child_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYUST_PATH + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYUST", None)
    env.update(extra)
    return env


def backend(python: str) -> str:
    """This interpreter's own hook back end; where it can, pyust traces calls and returns
    through the eval-frame function instead (python:process says which ran)."""
    return "monitoring" if python_version(python) >= (3, 12) else "setprofile"


_versions: dict = {}


def python_version(python: str) -> tuple:
    if python not in _versions:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout
        _versions[python] = tuple(int(x) for x in out.split())
    return _versions[python]


def user_site_env(tmp_path: Path, **extra) -> tuple:
    """An environment whose user site directory (under tmp_path) stands in for
    the environment's site-packages, with pyust in it and no PYTHONPATH: where
    `pyust enable` writes its .pth. Returns (env, site directory)."""
    version = "%d.%d" % python_version(PYTHON)
    base = tmp_path / "userbase"
    site = base / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    (site / "pyust").symlink_to(os.path.join(PYUST_PATH, "pyust"))
    env = child_env(PYTHONUSERBASE=str(base), **extra)
    env.pop("PYTHONPATH")
    return env, site
