"""`pyust enable`'s .pth is inert unless its variable opts in (issue 12): every
interpreter of the environment runs the line at start-up, so an inactive line
must leave the interpreter exactly as it is without pyust. The .pth is in a
venv's site-packages (a venv made with --system-site-packages, so that it is
the same interpreter with the same modules): unlike the user site directory,
a venv's site-packages is read under -I too."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, PYUST_PATH, child_env

# What the program sees at its first line.
MODULES = "import sys; print(sorted(sys.modules))"

# The shape of CPython's test_threading.test_import_from_another_thread, which
# runs its child with -I: threading must not be imported at start-up.
IMPORT_FROM_ANOTHER_THREAD = textwrap.dedent("""\
    import _thread
    import sys

    event = _thread.allocate_lock()
    event.acquire()

    def import_threading():
        import threading
        event.release()

    if 'threading' in sys.modules:
        raise Exception('threading is already imported')
    _thread.start_new_thread(import_threading, ())
    event.acquire()
    event.release()
    if 'threading' not in sys.modules:
        raise Exception('threading is not imported')
""")


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """(python, site-packages, env) of a venv with pyust in its site-packages
    and no .pth yet."""
    root = tmp_path_factory.mktemp("activation") / "venv"
    made = subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", "--without-pip",
                           str(root)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    python = str(root / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; "
                                "print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "pyust").symlink_to(os.path.join(PYUST_PATH, "pyust"))
    env = child_env()
    env.pop("PYTHONPATH", None)
    return python, site, env


def _run(python, args, env):
    done = subprocess.run([python, *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


@pytest.mark.parametrize("flags", [[], ["-E"], ["-I"]], ids=["plain", "-E", "-I"])
def test_inactive_pth_imports_nothing(venv, flags):
    """The modules at the program's first line are those of an interpreter without
    the .pth: with the variable unset, and under -E and -I with it set (these
    interpreters ignore the environment). Before the fix: 75 modules instead of
    54 (pyust, pyust._activate, pyust._greenlet, threading, typing, re, ...)."""
    python, site, env = venv
    without, _ = _run(python, [*flags, "-c", MODULES], env)
    enabled = subprocess.run([python, "-m", "pyust", "enable", "MY_TRACE"],
                             capture_output=True, text=True, env=env)
    assert enabled.returncode == 0, enabled.stderr
    try:
        unset, unset_err = _run(python, [*flags, "-c", MODULES], env)
        ignored = _run(python, [*flags, "-c", MODULES], {**env, "MY_TRACE": "1"})
        active, _ = _run(python, ["-c", MODULES], {**env, "MY_TRACE": "1"})
    finally:
        (site / "pyust-activate.pth").unlink()
    assert "'threading'" not in without  # else the comparison proves nothing
    assert (unset, unset_err) == (without, "")
    if flags:
        assert ignored == (without, "")
    assert "'pyust'" in active and "'pyust'" not in without  # the .pth was read


@pytest.mark.parametrize("flags", [[], ["-I"]], ids=["plain", "-I"])
def test_threading_imported_first_from_another_thread(venv, flags):
    """CPython's test_threading.test_import_from_another_thread, reduced: with the
    .pth enabled, untraced runs (variable unset, or -I with it set) start without
    threading, and importing it from a _thread thread works quietly."""
    python, site, env = venv
    enabled = subprocess.run([python, "-m", "pyust", "enable"], capture_output=True,
                             text=True, env=env)
    assert enabled.returncode == 0, enabled.stderr
    try:
        for extra in ({}, {"PYUST": "1"} if flags else {}):
            assert _run(python, [*flags, "-c", IMPORT_FROM_ANOTHER_THREAD],
                        {**env, **extra}) == ("", "")
    finally:
        (site / "pyust-activate.pth").unlink()


def test_old_pth_line_still_names_its_variable(venv):
    """`pyust enable` reports the variable of a .pth written by an earlier pyust
    (whose line imported pyust unconditionally) and of the new inert line."""
    python, site, env = venv
    pth = site / "pyust-activate.pth"
    pth.write_text("import pyust._activate; pyust._activate.activate('OLD_VAR')\n")
    check = "import pyust.pth as p; print(p.enabled_variable())"
    try:
        old, _ = _run(python, ["-c", check], env)
        _run(python, ["-m", "pyust", "enable", "NEW_VAR"], env)
        new, _ = _run(python, ["-c", check], env)
    finally:
        pth.unlink()
    assert (old, new) == ("OLD_VAR\n", "NEW_VAR\n")


@pytest.mark.parametrize("umask", [0o000, 0o077], ids=["umask-000", "umask-077"])
def test_pth_is_0644_and_replaces_a_link(venv, tmp_path, umask):
    """`pyust enable` writes its .pth 0644 whatever the umask: with umask 0 it was 0666
    before the fix (any user could make every interpreter of the environment run their
    code), with 077 0600 (other users' interpreters could not read it). A symbolic link
    planted at its name is replaced, its target left as it was (before: written)."""
    python, site, env = venv
    pth = site / "pyust-activate.pth"

    def enable():
        enabled = subprocess.run([python, "-m", "pyust", "enable", "MY_TRACE"],
                                 capture_output=True, text=True, env=env,
                                 preexec_fn=lambda: os.umask(umask))
        assert enabled.returncode == 0, enabled.stderr
        assert "activate('MY_TRACE')" in pth.read_text()
        return oct(pth.lstat().st_mode & 0o7777)

    target = tmp_path / "target"
    target.write_text("untouched\n")
    target.chmod(0o600)
    try:
        assert enable() == oct(0o644)
        pth.unlink()
        pth.symlink_to(target)
        assert enable() == oct(0o644)
    finally:
        pth.unlink()
    assert target.read_text() == "untouched\n"
    assert [p.name for p in site.iterdir() if "pyust-activate" in p.name] == []
