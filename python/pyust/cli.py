"""The `pyust` command line (also `python -m pyust`): which command runs, and how its
errors end.

    python -m pyust [--c-calls] [--lines] [--fast] -- app.py args     hook only
    python -m pyust run [options] -- app.py args             session + hook
    python -m pyust attach [options] PID                     a running process
    python -m pyust report [options] TRACE...                profiles, trees, flame graphs
    python -m pyust top URL                                  a live session's hottest functions
    python -m pyust enable [VAR] / disable                   .pth activation
    python -m pyust cflags [--cython]                        flags for run --native
    python -m pyust plugin-path                              where the babeltrace2 plugin is

pyust.__main__ calls this module, with its table of the commands (COMMANDS), for any
command line that is not a hook mode it can run at once. Each command is a module of
pyust.commands with a main(argv); this module only picks it (imported when needed: `pyust
report` loads nothing of run's) and ends its errors: a mistake on the command line prints
one line `pyust: error: ...` and exits 2, a failure of LTTng, babeltrace2 or the file system
one line and 1.
"""

from __future__ import annotations

import importlib
import sys

_EPILOG_TAIL = """
Without a command, pyust only installs its hook and runs the program: record
it with a session of your own:
  lttng create s && lttng enable-event -u 'python:*'
  lttng add-context -u -t vpid -t vtid && lttng start
  {pyust} -- app.py
  lttng stop && lttng destroy

Run `{pyust} COMMAND --help` for a command's options. Manual pages:
pyust(1) for the hook mode and the overview, pyust-COMMAND(1) for each command
(pyust-enable(1) for disable), pyust-events(7) for the events.
"""


def epilog(commands: dict) -> str:
    """The commands (pyust.__main__.COMMANDS), as `pyust --help` lists them."""
    from .args import program

    lines = ["commands:"]
    lines += [f"  {name:<12} {summary}" for name, (_, _, summary) in commands.items()]
    return "\n".join(lines) + "\n" + _EPILOG_TAIL.format(pyust=program())


def main(argv: list, commands: dict) -> int:
    """Run `pyust ARGV`: the command argv[0] names in commands (pyust.__main__.COMMANDS), or
    else the hook mode through argparse (--help, abbreviations, mistakes)."""
    from .args import UsageError

    if not argv or argv[0] not in commands:
        # The program's own exceptions (KeyboardInterrupt included) propagate
        # exactly as they would untraced.
        from .commands import hook

        try:
            return hook.main(argv, epilog(commands))
        except UsageError as error:
            print(f"pyust: error: {error}", file=sys.stderr)
            return 2
    _stop_activation_tracing()
    module, function, _ = commands[argv[0]]
    command = getattr(importlib.import_module(f"pyust.commands.{module}"), function)
    try:
        return command(argv[1:])
    except UsageError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        if not _is_failure(error):
            raise
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pyust: interrupted", file=sys.stderr)
        return 130


# The failures of LTTng, babeltrace2 and the file system (exit status 1), by module: a
# command that did not import a module (pyust run does not import pth) cannot raise its.
_FAILURES = (("pyust.lttng", "LttngError"), ("pyust.pth", "PthError"),
             ("pyust.babeltrace", "BabeltraceError"))


def _is_failure(error: Exception) -> bool:
    for module_name, class_name in _FAILURES:
        module = sys.modules.get(module_name)
        if module is not None and isinstance(error, getattr(module, class_name)):
            return True
    return False


def _stop_activation_tracing() -> None:
    """pyust's own commands are never traced, even when the .pth says so."""
    from . import _activate

    if _activate.started_by_activation:
        import pyust

        pyust.stop()
