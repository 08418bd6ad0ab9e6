"""`pyust run` traces the Python children of the program, through their environment only.

pyust run puts the directory of pyust's own sitecustomize (_children/sitecustomize.py,
in the installed package) first on the program's PYTHONPATH and the run's hook options
in PYUST. The program's descendants inherit both: an interpreter that reads PYTHONPATH
imports that sitecustomize at start-up, which

- takes its directory off sys.path again (the program sees sys.path as it would
  untraced; PYTHONPATH keeps it for the grandchildren);
- imports the interpreter's own sitecustomize (Debian has one), found further
  along sys.path, so that nothing the user has is lost (usercustomize, which
  site imports next, is not shadowed at all);
- when PYUST is set and pyust's native hook exists for this interpreter (same
  version and ABI), starts tracing with the run's options (_activate), counting
  its events in the run's tally (pyust.tally), and notes the process (and each
  of its os.fork() children) for the summary in the run's private directory
  (mode 0700, removed when the run ends).

The path a child gets is pyust's installed package, never a temporary directory:
processes that outlive the run keep their PYTHONPATH, and a temporary directory,
once removed, could be made again by another user with a sitecustomize of theirs
(which a late child running as root would run). The run's private directories
are written only while they are the run's (see the sitecustomize).

An interpreter of another version, a child whose environment lost PYUST or the
directory (a PYTHONPATH or env= of the program's own), and -E/-I children (which
ignore PYTHONPATH) run untraced and unchanged. No file outside the run's private
directories is written, and no other process on the machine sees any of it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile

from . import _activate

VARIABLE = "PYUST"
# The directories (os.pathsep between them: runs nest) where the processes note
# themselves, one new file each; and the directory of the run's tally.
PROCESSES_VARIABLE = "PYUST_RUN_PROCESSES"
TALLY_VARIABLE = "PYUST_RUN_TALLY"

# The directory of pyust's sitecustomize for the children (a fixed place that only
# pyust's installer can change; links resolved, so that nobody can re-point it).
SITE_DIRECTORY = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_children")


class Children:
    """The private directory of one `pyust run`: create() it, give environ() to
    the program, read processes() at the end, then remove() it."""

    def __init__(self, directory: str, value: str = "1", tally: str | None = None):
        self.directory = directory
        self.value = value
        self.tally = tally

    @classmethod
    def create(cls, hook_flags: list, tally: str | None = None) -> "Children":
        """A new private directory for these hook options (`pyust run`'s --modules,
        --exclude, --c-calls, --lines, --fast, --no-dormant, as _hook_flags() gives
        them); the children count their events in the directory tally (pyust.tally)
        when given."""
        directory = os.path.realpath(tempfile.mkdtemp(prefix="pyust-children-"))
        return cls(directory, shlex.join(hook_flags) if hook_flags else "1", tally)

    def environ(self, env: dict) -> dict:
        """env for the program's first process (`python -m pyust`): the sitecustomize's
        directory first on PYTHONPATH, the options in PYUST, the run's directories, and
        the mark that only this process sees (its sitecustomize removes it)."""
        env = dict(env)
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = SITE_DIRECTORY + (os.pathsep + path if path else "")
        env[VARIABLE] = self.value
        env[_activate.RUN_FIRST_VARIABLE] = "1"
        outer = env.get(PROCESSES_VARIABLE)
        env[PROCESSES_VARIABLE] = self.directory + (os.pathsep + outer if outer else "")
        if self.tally:
            env[TALLY_VARIABLE] = self.tally
        return env

    def processes(self) -> int:
        """How many processes were traced: the program, its traced Python children
        and their os.fork() children (each notes itself once, a file of its own)."""
        try:
            return len(os.listdir(self.directory))
        except OSError:
            return 0

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def prepare(hook_flags: list, enabled: bool = True, tally: str | None = None):
    """pyust run's Children (None with --no-children, or when the directory
    cannot be made: then one line says the children are not traced)."""
    if not enabled:
        return None
    try:
        return Children.create(hook_flags, tally)
    except OSError as error:
        print(f"pyust: Python children will not be traced: cannot create a private "
              f"directory in {tempfile.gettempdir()}: {error.strerror}", file=sys.stderr)
        return None


def finish(children) -> int | None:
    """The number of traced processes, and the directory removed (None with none)."""
    if children is None:
        return None
    try:
        return children.processes()
    finally:
        children.remove()


def traced(count: int | None) -> str:
    """The end of pyust run's summary line for `count` traced processes."""
    if count is None:
        return ""
    return f"; {count} process" + ("" if count == 1 else "es") + " traced"
