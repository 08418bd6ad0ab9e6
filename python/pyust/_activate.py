"""Start tracing at interpreter start-up: from the .pth that `pyust enable`
writes, and from the sitecustomize that `pyust run` gives the program's Python
children (see children.py).

The .pth line checks the environment itself and imports pyust only when its
variable opts in (see pth.line()): an inactive line imports nothing. Tracing
starts only when that variable is set to a non-empty value, the interpreter
does not ignore the environment (-E, -I), and the process runs with its real
uid (no setuid program inherits tracing). The value is `1`, or hook options
such as `--modules myapp,numpy --lines`: never code, never a path. With
PYUST_START_TIMEOUT set (pyust run sets it), the process waits for the session
to record it before going on (pyust._start_timeout).
"""

from __future__ import annotations

import os
import sys

# Set when this module started tracing, so the runner does not start twice.
started_by_activation = False
# The start() options it started with.
_started_options = None

# pyust run sets this in the environment of the program's first process only:
# that process is `python -m pyust`, which starts tracing with its own options
# (see children.py, which removes the variable there so that no child sees it).
RUN_FIRST_VARIABLE = "PYUST_RUN_FIRST"


def is_allowed(variable: str) -> bool:
    if sys.flags.ignore_environment or sys.flags.isolated:
        return False
    if os.getuid() != os.geteuid() or os.getgid() != os.getegid():
        return False
    return bool(os.environ.get(variable))


def activate(variable: str) -> None:
    """Start tracing if `variable` opts in; print one line on a bad value."""
    # site may run the .pth twice: a venv's site-packages is found both under lib/ and
    # through its lib64 symbolic link (Debian's 3.11), and the second time must stay silent.
    if started_by_activation or not is_allowed(variable):
        return
    if os.environ.get(RUN_FIRST_VARIABLE):
        return  # `python -m pyust` under pyust run: it starts with its own options
    options = _parse(variable, os.environ[variable].strip())
    if options is not None:
        _start(options)


def activate_for_run(variable: str) -> None:
    """In a Python child of a program under `pyust run`: trace with the options of
    the run (in `variable`), also when the .pth started with others."""
    if not is_allowed(variable):
        return
    options = _parse(variable, os.environ[variable].strip())
    if options is None or options == _started_options:
        return
    if started_by_activation:
        import pyust

        pyust.stop()  # the .pth of `pyust enable` started first, with another variable's options
    _start(options)


def _start(options: dict) -> None:
    global started_by_activation, _started_options
    import pyust

    if pyust._in_subinterpreter():
        return  # the main interpreter traces; pyust cannot in a sub-interpreter
    try:
        pyust.start(_hide_caller_stack=True, _start_wait=pyust._start_timeout(), **options)
    except pyust.TracerError as error:
        print(f"pyust: not tracing: {error}", file=sys.stderr)
        return
    started_by_activation = True
    _started_options = options


_USAGE = "use 1, or any of --modules PREFIXES --exclude PREFIXES --lines --c-calls --fast --no-dormant"
_FLAGS = {"--lines": "lines", "--c-calls": "c_calls", "--fast": "fast"}


def _parse(variable: str, value: str):
    """The start() options a variable's value asks for, or None (and one line
    on stderr) when the value is not understood."""
    options = {"modules": [], "exclude": [], "c_calls": False, "lines": False, "fast": False,
               "dormant": True}
    if value in ("1", "yes", "true", "on"):
        return options
    if any(c in value for c in "'\"\\"):
        import shlex  # only for a quoted value: pyust run's options need none

        try:
            words = shlex.split(value)
        except ValueError as error:
            print(f"pyust: not tracing: {variable}={value!r}: {error} ({_USAGE})",
                  file=sys.stderr)
            return None
    else:
        words = value.split()
    while words:
        word = words.pop(0)
        if word in _FLAGS:
            options[_FLAGS[word]] = True
        elif word == "--no-dormant":
            options["dormant"] = False
        elif word in ("--modules", "--exclude") and words:
            options[word[2:]].append(words.pop(0))
        else:
            print(f"pyust: not tracing: {variable}={value!r} has an unknown option {word!r} "
                  f"({_USAGE})", file=sys.stderr)
            return None
    return options
