"""Signals to `pyust run`: whatever ends it, the program gets the signal, the
session is stopped and destroyed, the trace stays readable, no process is left,
and pyust run ends as the program did (issue 12)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import resource
import signal
import subprocess
import termios
import time

import pytest

from pyusttest.environment import PYTHON, child_env
from pyusttest.run import run_pyust
from pyusttest.sessions import (SETUP_BY_COMMANDS, lttng, lttng_held_at_setup, session_names,
                                unique_name, wait_held)
from pyusttest.traces import read_trace

# Prints its pid once its function runs, then waits in that function.
WAITER = """\
import os, time
def waiting():
    print("ready", os.getpid(), flush=True)
    time.sleep(60)
waiting()
"""

# A ProcessPoolExecutor whose workers are busy: Ctrl-C must still end it. (A
# SIGINT to the main process alone lets the workers finish, as untraced.)
POOL = """\
import os, time
from concurrent.futures import ProcessPoolExecutor
def work(n):
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        time.sleep(0.01)
    return n
def waiting(pool):
    futures = [pool.submit(work, n) for n in range(2)]
    time.sleep(0.5)
    print("ready", os.getpid(), flush=True)
    return [f.result() for f in futures]
if __name__ == "__main__":
    with ProcessPoolExecutor(2) as pool:
        waiting(pool)
"""


def _tty_preexec() -> None:
    """Popen preexec_fn: a session of its own whose controlling terminal is
    stdin (a pty), with pyust run's group in the foreground: where the
    terminal's Ctrl-C goes."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    _default_signals()


@contextlib.contextmanager
def pyust_run(tmp_path, source: str, *, tty: bool = False, env=None, options=()):
    """`pyust run [options]` of source in a session of its own (with a pty as its
    terminal when tty); yields (process, trace dir, session name, program pid
    or None, pty master or None). Killed, and its session destroyed, however
    the test ends."""
    program = tmp_path / "prog.py"
    program.write_text(source)
    name = unique_name("sig")
    out = tmp_path / "trace"
    master = slave = None
    if tty:
        master, slave = pty.openpty()
    child = subprocess.Popen(
        [PYTHON, "-m", "pyust", "run", "--name", name, "-o", str(out), *options, "--",
         str(program)],
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env or child_env(), start_new_session=True,
        preexec_fn=_tty_preexec if tty else _default_signals)
    if slave is not None:
        os.close(slave)
    try:
        yield child, out, name, program, master
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        lttng("destroy", name, check=False)
        if master is not None:
            os.close(master)


def _default_signals() -> None:
    """Popen preexec_fn: the signals the tests send at their default disposition, as a
    terminal's shell starts a command. Ignored dispositions are inherited: under nohup
    (SIGHUP) or as a background job of a non-interactive shell (SIGINT, SIGQUIT), pyust
    run and its program would rightly ignore them, as an untraced program would."""
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)


def _ready_pid(child) -> int:
    line = child.stdout.readline()
    assert line.startswith("ready "), (line, child.stderr.read() if child.poll() is not None
                                       else "")
    return int(line.split()[1])


def _processes_of(program) -> list:
    """Processes still running the program (the traced one, workers)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and str(program).encode() in words:
            found.append(int(pid))
    return found


def _assert_clean_end(child, out, name, program):
    """No session, no process of the program left; the trace readable, with the
    program's function in it."""
    assert name not in session_names()
    deadline = time.monotonic() + 10
    while _processes_of(program) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_of(program) == []
    names = {e["fields"]["name"] for e in read_trace(out).of("python:call")}
    assert "waiting" in names
    summary = [line for line in child.stderr_text.splitlines() if line.startswith("pyust: ")]
    assert summary and summary[-1].startswith(f"pyust: trace in {out}: "), child.stderr_text


def _finish(child, timeout=60):
    child.wait(timeout=timeout)
    child.stderr_text = child.stderr.read()
    return child


@pytest.mark.parametrize("signum", [
    signal.SIGHUP, signal.SIGABRT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
    signal.SIGALRM, signal.SIGTERM, signal.SIGRTMIN,
], ids=lambda s: signal.Signals(s).name if s != signal.SIGRTMIN else "SIGRTMIN")
def test_terminating_signal_goes_to_the_program(tmp_path, signum):
    """kill -SIG of pyust run alone: the program dies of it as it would
    untraced, and so does pyust run, once the session is gone. (SIGPIPE
    goes to the program too, which ignores it, as Python programs do.)"""
    with pyust_run(tmp_path, WAITER) as (child, out, name, program, _):
        _ready_pid(child)
        child.send_signal(signum)
        _finish(child)
        assert child.returncode == -signum, child.stderr_text
        _assert_clean_end(child, out, name, program)


def test_handled_signal_lets_the_program_end_its_way(tmp_path):
    """A program that handles SIGTERM ends with its own status and output;
    pyust run with it, after its summary. (The handler writes with os.write, as a signal
    handler should: a print there raises "reentrant call" when the signal comes while
    stdout's buffer is held; seen once in 500 runs of the suite on 3.15.)"""
    source = WAITER.replace(
        "import os, time\n",
        "import os, sys, time, signal\n"
        "signal.signal(signal.SIGTERM, lambda *a: (os.write(1, b'bye\\n'), sys.exit(3)))\n")
    with pyust_run(tmp_path, source) as (child, out, name, program, _):
        _ready_pid(child)
        child.send_signal(signal.SIGTERM)
        _finish(child)
        assert child.returncode == 3, child.stderr_text
        assert child.stdout.read() == "bye\n"
        _assert_clean_end(child, out, name, program)


def test_sigint_to_pyust_run_alone_interrupts_the_program(tmp_path):
    """kill -INT of pyust run (not of its group): the program gets it once."""
    with pyust_run(tmp_path, WAITER) as (child, out, name, program, _):
        _ready_pid(child)
        child.send_signal(signal.SIGINT)
        _finish(child)
        assert child.returncode == -signal.SIGINT, child.stderr_text
        assert child.stderr_text.count("KeyboardInterrupt") == 1, child.stderr_text
        _assert_clean_end(child, out, name, program)


def test_ctrl_c_on_the_terminal_interrupts_the_program_once(tmp_path):
    """The terminal's Ctrl-C goes to pyust run and the program (one process
    group): pyust run does not send it a second time."""
    with pyust_run(tmp_path, WAITER, tty=True) as (child, out, name, program, master):
        _ready_pid(child)
        os.write(master, b"\x03")
        _finish(child)
        assert child.returncode == -signal.SIGINT, child.stderr_text
        assert child.stderr_text.count("KeyboardInterrupt") == 1, child.stderr_text
        _assert_clean_end(child, out, name, program)


@pytest.mark.parametrize("how", ["terminal", "pyust-run-alone"])
def test_ctrl_c_ends_a_process_pool_program(tmp_path, how):
    """A ProcessPoolExecutor program with busy workers ends on Ctrl-C, whether
    the terminal sends it to every process or it is sent to pyust run alone."""
    with pyust_run(tmp_path, POOL, tty=how == "terminal") as (child, out, name, program, master):
        _ready_pid(child)
        if master is not None:
            os.write(master, b"\x03")
        else:
            child.send_signal(signal.SIGINT)
        _finish(child, timeout=90)
        assert child.returncode in (-signal.SIGINT, 1), child.stderr_text
        assert "KeyboardInterrupt" in child.stderr_text
        _assert_clean_end(child, out, name, program)


def test_signal_before_the_program_starts_leaves_no_session(tmp_path):
    """SIGHUP while pyust run sets its session up: the session is destroyed
    and pyust run dies of SIGHUP; the program never starts. A wrapper in
    front of the real lttng holds `enable-channel` long enough."""
    env = lttng_held_at_setup(tmp_path, 5)
    with pyust_run(tmp_path, WAITER, env=env,
                   options=SETUP_BY_COMMANDS) as (child, out, name, program, _):
        wait_held(tmp_path)
        assert name in session_names()  # created, the program not started
        child.send_signal(signal.SIGHUP)
        _finish(child)
        assert child.returncode == -signal.SIGHUP, child.stderr_text
        assert child.stdout.read() == ""  # the program did not run
        assert name not in session_names()


# Dies of the signal given as its argument, as the untraced program does, dumping no core.
KILLS_ITSELF = """\
import os, resource, signal, sys
def dies(signum):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if signum != signal.SIGKILL:
        signal.signal(signum, signal.SIG_DFL)  # Python ignores SIGPIPE and SIGXFSZ
    os.kill(os.getpid(), signum)
dies(int(sys.argv[1]))
"""


def _core_files_land_in_the_cwd() -> bool:
    """Whether a core dump is a file in the dumping process's directory (core_pattern
    `core` or `core.%p`, not a program such as systemd-coredump, not another directory)."""
    with open("/proc/sys/kernel/core_pattern") as stream:
        pattern = stream.read().strip()
    return not pattern.startswith("|") and "/" not in pattern


@pytest.mark.parametrize("signum", [
    signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGPIPE,
    signal.SIGRTMAX,
], ids=lambda s: signal.Signals(s).name if s != signal.SIGRTMAX else "SIGRTMAX")
def test_program_killed_by_any_signal(tmp_path, signum):
    """A program killed by SIGKILL (an out-of-memory kill): pyust run printed a traceback
    (signal.signal(SIGKILL, SIG_DFL) fails with EINVAL) and exited 1. Now pyust run ends
    killed by the program's signal, as the untraced program ends (the shell's 128 + N),
    after its summary, and without a core dump of its own: where core files go to the
    current directory, pyust run may dump there (its limit is unlimited), and leaves none."""
    program = tmp_path / "prog.py"
    program.write_text(KILLS_ITSELF)
    plain = subprocess.run([PYTHON, program, str(signum)], capture_output=True, text=True,
                           env=child_env(), timeout=60)
    assert plain.returncode == -signum, plain.stderr
    dumps = _core_files_land_in_the_cwd()
    limit = resource.RLIM_INFINITY if dumps else 0
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    name = unique_name("sig")
    out = tmp_path / "trace"
    done = run_pyust(["run", "--name", name, "-o", str(out), "--", str(program), str(signum)],
                     cwd=cwd, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE,
                                                                    (limit, limit)))
    assert done.returncode == plain.returncode, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"pyust: trace in {out}: "), done.stderr
    assert name not in session_names()
    assert list(cwd.iterdir()) == []


# Ends one forked process per signal given by pyust run's own end (exit_like, as when the
# program died of that signal), and one by the signal itself (the untraced program's end);
# prints each signal's two statuses as the shell sees them.
EVERY_SIGNAL = """\
import os, resource, signal, sys
from pyust.commands.run import exit_like

def ended(signum, like_pyust_run):
    pid = os.fork()
    if pid == 0:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if like_pyust_run:
            os._exit(exit_like(-signum))
        if signum != signal.SIGKILL:
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

for signum in map(int, sys.argv[1:]):
    print(signum, ended(signum, False), ended(signum, True))
"""

# The signals whose default action is not to end the process (Linux signal(7)).
_NOT_ENDING = {signal.SIGCHLD, signal.SIGCONT, signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN,
               signal.SIGTTOU, signal.SIGURG, signal.SIGWINCH}


def test_pyust_run_ends_as_the_program_for_every_signal():
    """Every signal whose default action ends a process (the 23 standard ones and
    SIGRTMIN to SIGRTMAX): pyust run's end for a program killed by it gives the status of a
    process killed by it. Before: SIGKILL ended with status 1 (EINVAL), the others passed.
    (One fork per signal of one interpreter: a pyust run per signal would take 13 s.)"""
    signums = [s for s in range(1, signal.SIGRTMAX + 1)
               if s not in _NOT_ENDING and (s < 32 or s >= signal.SIGRTMIN)]
    done = subprocess.run([PYTHON, "-c", EVERY_SIGNAL, *map(str, signums)], capture_output=True,
                          text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    statuses = {int(s): (int(plain), int(ours)) for s, plain, ours in
                (line.split() for line in done.stdout.splitlines())}
    assert sorted(statuses) == signums
    assert {s: plain for s, (plain, _) in statuses.items()} == {s: -s for s in signums}
    assert {s: ours for s, (_, ours) in statuses.items()} == {s: -s for s in signums}, \
        done.stderr
