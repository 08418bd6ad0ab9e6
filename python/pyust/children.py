"""`pyust run` traces the Python children of the program, through their environment only.

pyust run makes a private directory (mode 0700, removed when it ends) holding a
sitecustomize.py, puts it first on the program's PYTHONPATH and the run's hook
options in PYUST. The program's descendants inherit both: an interpreter that
reads PYTHONPATH imports that sitecustomize at start-up, which

- takes its directory off sys.path again (the program sees sys.path as it would
  untraced; PYTHONPATH keeps it for the grandchildren);
- imports the interpreter's own sitecustomize (Debian has one), found further
  along sys.path, so that nothing the user has is lost (usercustomize, which
  site imports next, is not shadowed at all);
- when PYUST is set and pyust's native hook exists for this interpreter (same
  version and ABI), starts tracing with the run's options (_activate), counting
  its events in the run's tally (pyust.tally), and notes the process (and each
  of its os.fork() children) for the summary.

An interpreter of another version, a child whose environment lost PYUST or the
directory (a PYTHONPATH or env= of the program's own), and -E/-I children (which
ignore PYTHONPATH) run untraced and unchanged. No file outside the directory is
written, and no other process on the machine sees any of it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile

from . import _activate

VARIABLE = "PYUST"

# Compiled by whatever interpreter the program starts: no syntax newer than 3.0.
_SITECUSTOMIZE = '''\
# Written by `pyust run` for the Python children of the program it traces; it
# goes when the run ends. See pyust/children.py.
import os
import sys


def _pyust_run_child(module):
    here, package, processes, tally = %(here)r, %(package)r, %(processes)r, %(tally)r
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != here]
    # Removed only once the chain is done: under a `pyust run` inside a traced program, the
    # outer run's sitecustomize comes next, and must see it too.
    first = os.environ.get(%(first)r) is not None
    del sys.modules["sitecustomize"]
    try:
        import sitecustomize  # the interpreter's own, if any
    except ImportError as error:
        sys.modules["sitecustomize"] = module  # the import system takes it back from there
        module.pyust_placeholder = True  # none of the interpreter's: pyust._runner drops it
        if getattr(error, "name", None) != "sitecustomize":
            raise
    finally:
        os.environ.pop(%(first)r, None)
        if os.environ.get(%(variable)r) and not sys.flags.ignore_environment:
            _pyust_start(package, processes, tally, %(variable)r, first)


def _pyust_start(package, processes, tally, variable, first):
    try:
        import _imp
        suffixes = _imp.extension_suffixes()
        if not any(os.path.exists(os.path.join(package, "_native" + s)) for s in suffixes):
            return  # another interpreter than pyust's: untraced, silently
        # The program's first process is `python -m pyust`, which starts with its options.
        if not first:
            parent = os.path.dirname(package)
            added = parent not in sys.path
            if added:
                sys.path.append(parent)
            try:
                import pyust._activate
            finally:
                if added:
                    sys.path.remove(parent)
            if tally:
                pyust._tally_into(tally)
            pyust._activate.activate_for_run(variable)
            if not pyust.is_active():
                return

        def note():
            try:
                fd = os.open(processes, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 384)
                try:
                    os.write(fd, ("%%d\\n" %% os.getpid()).encode())
                finally:
                    os.close(fd)
            except OSError:
                pass  # the run is over: nobody counts any more

        note()
        os.register_at_fork(after_in_child=note)
    except Exception:
        pass  # never break the program's child


_pyust_run_child(sys.modules["sitecustomize"])
del _pyust_run_child, _pyust_start
'''


class Children:
    """The private directory of one `pyust run`: create() it, give environ() to
    the program, read processes() at the end, then remove() it."""

    def __init__(self, directory: str):
        self.directory = directory
        self._processes = os.path.join(directory, "processes")

    @classmethod
    def create(cls, hook_flags: list, tally: str | None = None) -> "Children":
        """A new private directory with the sitecustomize for these hook options
        (`pyust run`'s --modules, --exclude, --c-calls, --lines, --fast,
        --no-dormant, as _hook_flags() gives them); the children count their
        events in the directory tally (pyust.tally) when given."""
        import pyust

        directory = os.path.realpath(tempfile.mkdtemp(prefix="pyust-children-"))
        children = cls(directory)
        children.value = shlex.join(hook_flags) if hook_flags else "1"
        source = _SITECUSTOMIZE % {
            "here": directory,
            "package": os.path.dirname(os.path.abspath(pyust.__file__)),
            "processes": children._processes,
            "tally": tally,
            "first": _activate.RUN_FIRST_VARIABLE,
            "variable": VARIABLE,
        }
        with open(os.path.join(directory, "sitecustomize.py"), "w", encoding="utf-8") as stream:
            stream.write(source)
        return children

    def environ(self, env: dict) -> dict:
        """env for the program's first process (`python -m pyust`): the directory
        first on PYTHONPATH, the options in PYUST, and the mark that only this
        process sees (its sitecustomize removes it)."""
        env = dict(env)
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = self.directory + (os.pathsep + path if path else "")
        env[VARIABLE] = self.value
        env[_activate.RUN_FIRST_VARIABLE] = "1"
        return env

    def processes(self) -> int:
        """How many processes were traced: the program, its traced Python children
        and their os.fork() children (each notes itself once)."""
        try:
            with open(self._processes, "rb") as stream:
                return sum(1 for line in stream if line.strip())
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
