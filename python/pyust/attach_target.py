"""What pyust knows of a running process before it gets in: that it exists, its
user, the version of the CPython it runs, and whether this user may attach to it
(`pyust attach` checks all of it before the first step; pyust/remote.py gets in).

Nothing of the process is run: its interpreter's version is read from the libpython
it maps or from its executable's symbols (Py_Version) as data, which any user may
have written. Text that comes from the process (its executable's name) reaches the
terminal escaped. Every refusal raises AttachError with one line that says why and
what to change.
"""

from __future__ import annotations

import os
import re
import shutil

from . import elf
from .args import user_name

# The interpreters pyust supports, as in scripts/setup and pyust/__init__.py.
OLDEST = (3, 10)
NEWEST = (3, 15)
REMOTE_EXEC = (3, 14)  # sys.remote_exec from here on; gdb before

class AttachError(Exception):
    """pyust cannot attach to (or detach from) the process; one line says why and
    what to change."""


class Target:
    """A running process to trace: pid, its executable, its interpreter's
    version (major, minor), its user id."""

    def __init__(self, pid: int, exe: str, version: tuple, uid: int):
        self.pid = pid
        self.exe = exe
        self.version = version
        self.uid = uid

    @property
    def version_text(self) -> str:
        return "%d.%d" % self.version

    def is_alive(self) -> bool:
        """True while the process exists (a zombie counts as gone)."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stream:
                fields = stream.read().rsplit(b")", 1)[1].split()
            return fields[0] != b"Z"
        except (OSError, IndexError):
            return False


def read_file(path: str, mode: str = "r"):
    with open(path, mode) as stream:
        return stream.read()


def escaped(text: str) -> str:
    """Text that came from the target (its words, its files' names) for a terminal,
    perhaps root's: whatever is not printable (escape sequences, line breaks, bidi
    overrides) written as an escape (\\x1b, \\u202e)."""
    return "".join(character if character.isprintable()
                   else character.encode("unicode_escape").decode("ascii") for character in text)


# The version of a CPython older than 3.10 (it has _PyRuntime, but none of the symbols
# that 3.10 added): which one does not matter, pyust refuses them all.
_OLDER = (3, 9)


def _python_version(pid: int, exe: str) -> tuple | None:
    """The version of the interpreter in process pid: from the libpython it maps,
    else from the Py_Version its executable holds (3.11+, a statically linked
    CPython), else from its executable's name (python3.12), else 3.10 or _OLDER
    for an executable with CPython's _PyRuntime and without Py_Version; None when
    the process runs no CPython. All read as data: the executable may be any
    user's, and root runs nothing of it."""
    try:
        maps = read_file(f"/proc/{pid}/maps")
    except OSError:
        maps = ""
    found = re.search(r"/libpython(\d+)\.(\d+)[a-z]*\.so", maps)
    if found:
        return int(found.group(1)), int(found.group(2))
    symbols, py_version = {}, None
    try:
        # The file the process runs, even if its path now names another one.
        fd = os.open(f"/proc/{pid}/exe", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        fd = None
    if fd is not None:
        try:
            symbols = elf.defined_symbols(fd, {"Py_Version", "_PyRuntime",
                                               "PyModule_AddObjectRef"})
            if "Py_Version" in symbols:
                py_version = elf.read_unsigned(fd, symbols["Py_Version"])
        except OSError:
            pass
        finally:
            os.close(fd)
    if py_version and "_PyRuntime" in symbols:
        return py_version >> 24 & 0xFF, py_version >> 16 & 0xFF  # PY_VERSION_HEX
    found = re.fullmatch(r"python(\d+)\.(\d+)[a-z]*", os.path.basename(exe))
    if found:
        return int(found.group(1)), int(found.group(2))
    if "_PyRuntime" in symbols:  # a CPython from before Py_Version
        return (3, 10) if "PyModule_AddObjectRef" in symbols else _OLDER
    return None


def _ptrace_scope() -> int:
    try:
        return int(read_file("/proc/sys/kernel/yama/ptrace_scope").strip())
    except (OSError, ValueError):
        return 0  # no Yama: classic ptrace permissions


def inspect(pid: int) -> Target:
    """The process pid, checked for what attaching needs: that it exists, runs a
    CPython pyust supports, may be ptraced by this user, and (3.14+) allows
    remote debugging. Raises AttachError otherwise."""
    if pid <= 0:
        raise AttachError(f"{pid} is not a process id")
    if pid == os.getpid():
        raise AttachError("pyust attach cannot trace itself")
    try:
        status = read_file(f"/proc/{pid}/status")
    except FileNotFoundError:
        raise AttachError(f"no process with pid {pid}") from None
    except OSError as error:
        raise AttachError(f"cannot read process {pid}: {error.strerror}") from None
    uid = int(re.search(r"^Uid:\s+\d+\s+(\d+)", status, re.M).group(1))
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except PermissionError:
        raise AttachError(f"process {pid} runs as user {user_name(uid)}: run pyust attach as "
                          "that user or as root") from None
    except OSError:
        raise AttachError(f"process {pid} has no executable (a kernel thread or a zombie): "
                          "not a Python process") from None
    exe = exe.removesuffix(" (deleted)")
    version = _python_version(pid, exe)
    if version is None:
        raise AttachError(f"process {pid} is not a Python process (it runs {escaped(exe)})")
    if not OLDEST <= version <= NEWEST:
        which = "a CPython older than 3.10" if version == _OLDER else \
            f"Python {version[0]}.{version[1]}"
        raise AttachError(f"process {pid} runs {which}: pyust supports CPython "
                          f"{OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]}")
    if os.geteuid() != 0:
        if uid != os.geteuid():
            raise AttachError(f"process {pid} runs as user {user_name(uid)}: run pyust "
                              "attach as that user or as root")
        scope = _ptrace_scope()
        if scope >= 1:
            raise AttachError(
                f"this kernel lets only a parent (or root) debug a process "
                f"(kernel.yama.ptrace_scope = {scope}): run pyust attach as root, or "
                "`sysctl kernel.yama.ptrace_scope=0` (as root) to let a user attach to "
                "their own processes")
    elif _ptrace_scope() >= 3:
        raise AttachError("this kernel forbids attaching to any process "
                          "(kernel.yama.ptrace_scope = 3, until the next boot)")
    target = Target(pid, exe, version, uid)
    if version >= REMOTE_EXEC:
        _check_remote_debug(target)
    elif shutil.which("gdb") is None:
        raise AttachError(f"attaching to Python {target.version_text} needs gdb "
                          "(apt-get install gdb); Python 3.14 and later need none")
    return target


def _check_remote_debug(target: Target) -> None:
    """Refuses a 3.14+ target that disabled remote debugging, naming how."""
    try:
        environ = read_file(f"/proc/{target.pid}/environ", "rb").split(b"\0")
        argv = read_file(f"/proc/{target.pid}/cmdline", "rb").split(b"\0")
    except OSError:
        return  # sys.remote_exec says so itself
    how = None
    if any(item.startswith(b"PYTHON_DISABLE_REMOTE_DEBUG=") and item != b"PYTHON_DISABLE_REMOTE_DEBUG="
           for item in environ):
        how = "its environment sets PYTHON_DISABLE_REMOTE_DEBUG"
    for index, arg in enumerate(argv):
        if arg == b"-X" and index + 1 < len(argv) and argv[index + 1] == b"disable_remote_debug":
            how = "it runs with -X disable_remote_debug"
        elif arg == b"-Xdisable_remote_debug":
            how = "it runs with -X disable_remote_debug"
    if how:
        raise AttachError(f"process {target.pid} does not allow remote debugging ({how}): "
                          "start it without that to attach")
