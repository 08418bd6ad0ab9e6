"""The program starts in the interpreter state of an untraced run (issue 12):
the same modules imported, plus the fewest of pyust's own; the same
__main__.__file__, sys.argv, sys.orig_argv and sys.path[0]; the same message
and status for a script or module that does not exist. Under pyust run the
program used to start with 140 modules instead of 54 (argparse, subprocess,
socket, xml.etree, ...): their import cost vanished from its profile."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from pyusttest.environment import PYTHON, RUN_TIMEOUT, child_env
from pyusttest.run import run_pyust
from pyusttest.sessions import unique_name

# Prints, at its first line, what the interpreter looks like.
PROBE = """\
import sys, json
print(json.dumps({"modules": sorted(m for m in sys.modules if m != "json" and not m.startswith("json.")),
                  "file": globals().get("__file__"), "argv": sys.argv, "orig_argv": sys.orig_argv[1:],
                  "path0": sys.path[0], "name": __name__, "spec": repr(__spec__),
                  "builtins": repr(__builtins__)}))
"""

# What pyust may add: its package, native hook and runner, and what the hook
# needs from the interpreter (atexit; not threading, whose import made the interpreter
# run threading._shutdown at exit, in every program's profile).
PYUST_OWN = {"pyust", "pyust._native", "pyust._runner", "pyust._greenlet"}


def _imported_by(code: str, cwd) -> set:
    """The modules `python -c code` adds to an untraced start."""
    probe = "import sys; before = set(sys.modules); %s; print('\\n'.join(set(sys.modules) - before))"
    result = subprocess.run([PYTHON, "-c", probe % code], capture_output=True, text=True,
                            env=child_env(), cwd=cwd, timeout=RUN_TIMEOUT)
    return set(result.stdout.split())


def _probe(command: list, cwd) -> dict:
    result = subprocess.run(command, capture_output=True, text=True, env=child_env(), cwd=cwd,
                            timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.stderr
    # Before json's own import (json is left out of the list, on both sides).
    return json.loads(result.stdout.splitlines()[0])


@pytest.fixture
def program(tmp_path):
    package = tmp_path / "probepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "probe.py").write_text(PROBE)
    (tmp_path / "probe.py").write_text(PROBE)
    return tmp_path


@pytest.mark.parametrize("target", [["probe.py", "a"], ["-m", "probepkg.probe", "a"],
                                    ["-c", PROBE, "a"]],
                         ids=["script", "module", "code"])
@pytest.mark.parametrize("how", ["hook", "run"])
def test_program_starts_as_untraced(program, tmp_path, target, how):
    untraced = _probe([PYTHON, *target], program)
    if how == "hook":
        traced = _probe([PYTHON, "-m", "pyust", "--", *target], program)
    else:
        out = tmp_path / "trace"
        traced = _probe([PYTHON, "-m", "pyust", "run", "--name", unique_name("state"), "-o",
                         str(out), "--", *target], program)
    allowed = PYUST_OWN | _imported_by("import atexit", program)
    if how == "hook" and target[0] != "-m":
        # `python -m pyust` itself: runpy (and what it imports) runs pyust.
        allowed |= _imported_by("import runpy", program)
    extra = set(traced["modules"]) - set(untraced["modules"])
    assert extra <= allowed, sorted(extra - allowed)
    assert set(untraced["modules"]) <= set(traced["modules"])
    for key in ("file", "argv", "orig_argv", "path0", "name", "builtins"):
        assert traced[key] == untraced[key], key
    assert traced["spec"].replace("0x", "") .split(" at ")[0] == \
        untraced["spec"].replace("0x", "").split(" at ")[0]
    if target[0] not in ("-m", "-c"):
        assert os.path.isabs(traced["file"])


def test_pyust_run_imports_none_of_the_command_line(program, tmp_path):
    """The modules of pyust's command line (argparse, subprocess, xml, ...) are
    not in the program's interpreter."""
    traced = _probe([PYTHON, "-m", "pyust", "run", "--name", unique_name("state"), "-o",
                     str(tmp_path / "trace"), "--", "probe.py"], program)
    for module in ("argparse", "subprocess", "dataclasses", "xml.etree.ElementTree", "socket",
                   "typing", "inspect", "zipfile", "runpy", "pyust.cli", "pyust.lttng"):
        assert module not in traced["modules"]


@pytest.mark.parametrize("target, status", [(["missing.py"], 2), (["-m", "no_such_mod_x"], 1)],
                         ids=["script", "module"])
@pytest.mark.parametrize("how", ["hook", "run"])
def test_missing_program_fails_as_python_does(tmp_path, target, status, how):
    untraced = subprocess.run([PYTHON, *target], capture_output=True, text=True,
                              env=child_env(), cwd=tmp_path, timeout=RUN_TIMEOUT)
    args = ["--", *target] if how == "hook" else [
        "run", "--name", unique_name("missing"), "-o", str(tmp_path / "trace"), "--", *target]
    traced = run_pyust(args, cwd=tmp_path)
    assert untraced.returncode == status
    assert traced.returncode == status
    if how == "run" and target[0] == "-m":
        # The module is looked up in the traced interpreter, once the session runs.
        assert traced.stderr.startswith(untraced.stderr), traced.stderr
    else:
        assert traced.stderr == untraced.stderr


@pytest.mark.parametrize("how", ["hook", "run"])
def test_code_tracebacks_show_their_lines_as_untraced(tmp_path, how):
    """An exception out of `-c CODE` is told with the same lines as `python -c CODE`
    tells it: from 3.13 with the code's own line under each frame (before: pyenv's
    3.13.0 printed the frames without their lines under pyust)."""
    code = "def f():\n    return 1 / 0\nf()\n"
    untraced = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True,
                              env=child_env(), cwd=tmp_path, timeout=RUN_TIMEOUT)
    if how == "hook":
        command = [PYTHON, "-m", "pyust", "--", "-c", code]
    else:
        command = [PYTHON, "-m", "pyust", "run", "--name", unique_name("tb"), "-o",
                   str(tmp_path / "trace"), "--", "-c", code]
    traced = subprocess.run(command, capture_output=True, text=True, env=child_env(),
                            cwd=tmp_path, timeout=RUN_TIMEOUT)
    assert traced.returncode == untraced.returncode == 1
    told = [line for line in traced.stderr.splitlines() if not line.startswith("pyust: ")]
    assert told == untraced.stderr.splitlines()
