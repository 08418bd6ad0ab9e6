"""`pyust enable` / `pyust disable`: the .pth file that traces every interpreter
of this environment whose environment opts in (see _activate)."""

from __future__ import annotations

import os
import re
import tempfile

PTH_NAME = "pyust-activate.pth"
DEFAULT_VARIABLE = "PYUST"
_VARIABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class PthError(Exception):
    """The .pth cannot be written or removed; the message says why."""


def site_dir() -> str:
    """The directory pyust is installed in: the .pth goes beside it."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pth_path() -> str:
    return os.path.join(site_dir(), PTH_NAME)


def pth_line(variable: str) -> str:
    """The .pth line: it reads the environment and, unless its variable opts in,
    imports nothing (site has imported os and sys already). Every interpreter of
    the environment runs it at start-up, traced or not, so an inactive line must
    leave the interpreter as it would be without pyust (CPython's test_threading
    checks that threading is not imported at start-up, for one). The same checks
    as _activate.is_allowed: -E and -I ignore the variable, a setuid process too."""
    return (f"import os, sys; sys.flags.ignore_environment or sys.flags.isolated "
            f"or not os.environ.get({variable!r}) "
            f"or os.getuid() != os.geteuid() or os.getgid() != os.getegid() "
            f"or __import__('pyust._activate')._activate.activate({variable!r})\n")


def enable(variable: str = DEFAULT_VARIABLE) -> str:
    """Write the .pth, mode 0644 whatever the umask; returns its path. Raises PthError.

    The line goes into a new file beside it that is then renamed into place: a
    symbolic link planted at the .pth's name is replaced, its target never
    written, and no interpreter reads a half-written line."""
    if not _VARIABLE_RE.match(variable):
        raise PthError(f"{variable!r} is not an environment variable name (letters, digits, _)")
    path = pth_path()
    line = pth_line(variable)
    temporary = None
    try:
        # mkstemp creates it (O_EXCL, never through a link), 0600; not a .pth while partial.
        fd, temporary = tempfile.mkstemp(prefix=f".{PTH_NAME}-", suffix=".part", dir=site_dir())
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            os.fchmod(fd, 0o644)  # every user's interpreter reads it; nobody else writes it
            stream.write(line)
        os.replace(temporary, path)
        temporary = None
    except OSError as error:
        raise PthError(f"cannot write {path}: {error.strerror} (run as the owner of {site_dir()})") from None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
    return path


def disable() -> str | None:
    """Remove the .pth; returns its path, or None when it was not there."""
    path = pth_path()
    try:
        os.remove(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise PthError(f"cannot remove {path}: {error.strerror}") from None
    return path


def enabled_variable() -> str | None:
    """The variable the installed .pth listens to, or None."""
    try:
        with open(pth_path(), encoding="utf-8") as stream:
            match = re.search(r"activate\('([A-Za-z0-9_]+)'\)", stream.read())
    except OSError:
        return None
    return match.group(1) if match else None
