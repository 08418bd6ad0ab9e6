"""Running programs: under the hook alone (`python -m pyust -- PROGRAM`), under a pyust command,
or untraced for the reference behaviour, each with the interpreter and package under test; the
program of the loss-accounting tests; and the native stacks of programs left hanging.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess

from pyusttest.environment import FAST, PYTHON, RUN_TIMEOUT, child_env


# A million events (half a million calls) from one thread, then the hook's
# count of what it handed to LTTng on standard error: the loss-accounting
# tests' program.
MILLION_EVENTS = """\
import sys
import pyust
def f():
    pass
for _ in range(500_000):
    f()
pyust.stop()  # nothing more from this process: the count is final
print(pyust.emitted_events(), file=sys.stderr)
"""


def default_sigint() -> None:
    """A Popen preexec_fn: SIGINT's default disposition in the child, whatever the
    test runner's (a shell's background job ignores SIGINT, and children inherit
    that), as a terminal's foreground program has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def native_stacks(session: int) -> str:
    """gdb's backtrace of every thread of every process in session (a process's session
    id), for the message of a test that hung; what gdb could not give is said instead."""
    if shutil.which("gdb") is None:
        return "(no native stacks: gdb is not installed)"
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.getsid(int(entry)) == session:
                pids.append(int(entry))
        except OSError:
            pass
    dumps = []
    for pid in sorted(pids):
        try:
            result = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx",
                                     "-ex", "thread apply all bt"],
                                    capture_output=True, text=True, timeout=60)
            lines = [line for line in result.stdout.splitlines()
                     if line.startswith(("#", "Thread "))]
        except subprocess.TimeoutExpired:
            lines = ["(gdb timed out)"]
        dumps.append(f"== process {pid}\n" + "\n".join(lines))
    return "\n".join(dumps) or f"(no process left in session {session})"


def run_hooked(program_argv: list, *, flags=(), env=None, python=None, **kwargs):
    """`python -m pyust [flags] -- program_argv`: the hook only."""
    flags = [*flags, "--fast"] if FAST else list(flags)
    return subprocess.run([python or PYTHON, "-m", "pyust", *flags, "--", *program_argv],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=env or child_env(), **kwargs)


def run_plain(program_argv: list, *, env=None, python=None, **kwargs):
    """`python program_argv`, untraced: the reference behaviour."""
    return subprocess.run([python or PYTHON, *program_argv], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=env or child_env(), **kwargs)


_SETPROFILE_REFERENCE = """\
import json, runpy, sys
program = sys.argv[1]
seen = []
def profile(frame, event, arg):
    if event in ("call", "return") and frame.f_code.co_filename == program:
        seen.append((event, frame.f_code.co_name))
sys.setprofile(profile)
try:
    runpy.run_path(program, run_name="__main__")
finally:
    sys.setprofile(None)
    print(json.dumps(seen))
"""


def setprofile_flow(program: str, *, python=None) -> list:
    """The ('call' or 'return', co_name) events sys.setprofile sees in one untraced
    run of program on the interpreter under test (its module body shows as
    '<module>'): what that interpreter does where versions differ (a generator
    resumed or not on close(), ...), asked of it instead of read from its version."""
    result = run_plain(["-c", _SETPROFILE_REFERENCE, program], python=python)
    assert result.returncode == 0, result.stderr
    return [tuple(event) for event in json.loads(result.stdout.splitlines()[-1])]


def run_pyust(args: list, *, env=None, **kwargs):
    """`python -m pyust ARGS` (any command; `run` gets --fast in the fast mode)."""
    if FAST and args[:1] == ["run"]:
        args = ["run", "--fast", *args[1:]]
    return subprocess.run([PYTHON, "-m", "pyust", *args], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=env or child_env(), **kwargs)
