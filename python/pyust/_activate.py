"""Start tracing at interpreter start-up, from the .pth that `pyust enable` writes.

The .pth line names the environment variable that opts in. Tracing starts
only when that variable is set to a non-empty value, the interpreter does not
ignore the environment (-E, -I), and the process runs with its real uid (no
setuid program inherits tracing). The value is `1`, or hook options such as
`--modules myapp,numpy --lines`: never code, never a path.
"""

from __future__ import annotations

import os
import shlex
import sys

# Set when this module started tracing, so the runner does not start twice.
started_by_activation = False


def is_allowed(variable: str) -> bool:
    if sys.flags.ignore_environment or sys.flags.isolated:
        return False
    if os.getuid() != os.geteuid() or os.getgid() != os.getegid():
        return False
    return bool(os.environ.get(variable))


def activate(variable: str) -> None:
    """Start tracing if `variable` opts in; print one line on a bad value."""
    global started_by_activation
    # site may run the .pth twice: a venv's site-packages is found both under lib/ and
    # through its lib64 symbolic link (Debian's 3.11), and the second time must stay silent.
    if started_by_activation or not is_allowed(variable):
        return
    value = os.environ[variable].strip()
    options = _parse(variable, value)
    if options is None:
        return
    import pyust

    if pyust._in_subinterpreter():
        return  # the main interpreter traces; pyust cannot in a sub-interpreter
    try:
        pyust.start(_hide_caller_stack=True, **options)
    except pyust.TracerError as error:
        print(f"pyust: not tracing: {error}", file=sys.stderr)
        return
    started_by_activation = True


_USAGE = "use 1, or any of --modules PREFIXES --exclude PREFIXES --lines --c-calls --fast"


def _parse(variable: str, value: str):
    """The start() options a variable's value asks for, or None (and one line
    on stderr) when the value is not understood."""
    options = {"modules": [], "exclude": [], "c_calls": False, "lines": False, "fast": False}
    if value in ("1", "yes", "true", "on"):
        return options
    try:
        words = shlex.split(value)
    except ValueError as error:
        print(f"pyust: not tracing: {variable}={value!r}: {error} ({_USAGE})", file=sys.stderr)
        return None
    while words:
        word = words.pop(0)
        if word in ("--lines", "--c-calls", "--fast"):
            options[word[2:].replace("-", "_")] = True
        elif word in ("--modules", "--exclude") and words:
            options[word[2:]].append(words.pop(0))
        else:
            print(f"pyust: not tracing: {variable}={value!r} has an unknown option {word!r} "
                  f"({_USAGE})", file=sys.stderr)
            return None
    return options
