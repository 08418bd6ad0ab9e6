"""The session daemon absent, stopped (SIGSTOP) or killed while a program is
traced (issue 7): the program runs on as untraced, `pyust run` says in one line
what happened and whether the trace is readable, and with --shm-path the
buffers survive a crash for lttng-crash.

Every daemon stopped or killed here is a private one, run as user nobody with
its own LTTNG_HOME: the machine's root session daemon is never touched. Tests
that need one skip, saying why, when they cannot become nobody."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, PYUST_PATH, READ_TIMEOUT, RUN_TIMEOUT, child_env

NOBODY = 65534
# The program runs about two seconds, calling work() all along; it prints
# `ready` when it starts and its pid into pid.txt.
PROGRAM = """\
import os, sys, time
def work(i):
    return i * 2
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pid.txt"), "w") as f:
    f.write(str(os.getpid()))
print("ready", flush=True)
deadline = time.monotonic() + 2.0
while time.monotonic() < deadline:
    for i in range(200):
        work(i)
    time.sleep(0.001)
print("done", flush=True)
sys.exit(3)
"""


def _readable_by_others(path: str) -> bool:
    return os.access(path, os.R_OK) and all(
        os.stat(parent).st_mode & 0o001 for parent in Path(path).resolve().parents)


class Nobody:
    """User nobody with a home of its own (LTTNG_HOME) and a work directory;
    `daemon()` starts its private session daemon (no kernel domain)."""

    def __init__(self, groups=()):
        self.top = Path(tempfile.mkdtemp(prefix="pyust-sessiond-faults-"))
        self.top.chmod(0o755)
        self.home = self.top / "home"
        self.work = self.top / "work"
        for directory in (self.home, self.work):
            directory.mkdir()
            os.chown(directory, NOBODY, NOBODY)
        self.program = self.work / "prog.py"
        self.program.write_text(PROGRAM)
        self.program.chmod(0o644)
        self.env = child_env(LTTNG_HOME=str(self.home), HOME=str(self.home))
        group_args = ["--groups=" + ",".join(map(str, groups))] if groups else ["--clear-groups"]
        self.user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", *group_args]

    def argv(self, *argv) -> list:
        return [*self.user, *map(str, argv)]

    def run(self, *argv, env=None, timeout=RUN_TIMEOUT) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*argv), capture_output=True, text=True,
                              timeout=timeout, env=env or self.env, cwd=self.work)

    def daemon(self) -> int:
        subprocess.run(self.argv("lttng-sessiond", "--daemonize", "--no-kernel"), check=True,
                       timeout=60, env=self.env)
        return self.daemon_pid()

    def daemon_pid(self) -> int | None:
        pid_file = self.home / ".lttng" / "lttng-sessiond.pid"
        if not pid_file.exists():
            return None
        return int(pid_file.read_text().splitlines()[0])

    def pid(self) -> int:
        return int((self.work / "pid.txt").read_text())

    def close(self):
        pid = self.daemon_pid()
        if pid:
            try:  # its consumer daemons are in its process group
                os.kill(pid, signal.SIGCONT)
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.top, ignore_errors=True)


def _need_nobody():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a private session daemon as user nobody")
    for path in (PYTHON, PYUST_PATH):
        if not _readable_by_others(path):
            pytest.skip(f"{path} is not readable by user nobody")


@pytest.fixture
def nobody():
    _need_nobody()
    user = Nobody()
    yield user
    user.close()


def _untraced(nobody: Nobody) -> subprocess.CompletedProcess:
    return nobody.run(PYTHON, nobody.program)


def _run_and(nobody: Nobody, fault, *run_args):
    """`pyust run [run_args] -- prog.py` as nobody; `fault()` once the program
    printed `ready`. Returns (status, stdout, stderr, seconds)."""
    command = nobody.argv(PYTHON, "-m", "pyust", "run", *run_args, "--", nobody.program)
    begin = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=nobody.env, cwd=nobody.work)
    try:
        first = child.stdout.readline()
        assert first == "ready\n", child.stderr.read()
        time.sleep(0.5)
        fault()
        out, err = child.communicate(timeout=RUN_TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, first + out, err, time.monotonic() - begin


def _events_of(trace: Path, pid: int) -> list:
    """`babeltrace2 TRACE` lines of process pid (under a timeout)."""
    result = subprocess.run(["babeltrace2", str(trace)], capture_output=True, text=True,
                            timeout=READ_TIMEOUT)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if f"vpid = {pid}," in line]


def test_daemon_killed_mid_run_shm_path_and_lttng_crash(nobody):
    """kill -9 of the session daemon and its consumer daemon (their process
    group: the tracing daemons crash) while `pyust run --shm-path` records:
    the program ends as untraced, pyust run says the daemon died and whether
    the trace is readable, and prints the lttng-crash command, which extracts
    a trace that babeltrace2 and pyust report read."""
    plain = _untraced(nobody)
    pid = nobody.daemon()
    shm = nobody.work / "shm"
    status, out, err, seconds = _run_and(
        nobody, lambda: os.killpg(pid, signal.SIGKILL),
        "-o", nobody.work / "trace", "--shm-path", shm)
    assert (status, out) == (plain.returncode, plain.stdout) == (3, "ready\ndone\n")
    assert seconds < 60
    lines = err.splitlines()
    died = [line for line in lines if "died while the program ran" in line]
    assert len(died) == 1, err
    assert re.match(rf"pyust: the session daemon \(pid {pid}\) died while the program ran: "
                    rf"the trace in {re.escape(str(nobody.work / 'trace'))} is (not )?readable",
                    died[0]), died[0]
    command = re.search(r"`(lttng-crash [^`]+)`", err)
    assert command, err
    argv = shlex.split(command.group(1))
    assert argv[-1] == str(shm)
    extract = Path(argv[2])
    crash = nobody.run(*argv, timeout=READ_TIMEOUT)
    assert crash.returncode == 0, crash.stderr
    program_pid = nobody.pid()
    calls = [line for line in _events_of(extract, program_pid) if "python:call" in line]
    assert any('name = "work"' in line for line in calls), calls[-5:]
    report = nobody.run(PYTHON, "-m", "pyust", "report", extract, "--pid", program_pid,
                        "--format", "folded", "--timeout", "60")
    assert report.returncode == 0, report.stderr
    assert report.stdout.strip(), report.stderr


def test_daemon_alone_killed_mid_run_leaves_nothing_to_recover(nobody):
    """kill -9 of lttng-sessiond alone: its consumer daemon exits and removes
    the buffer files; pyust run says so instead of offering lttng-crash."""
    plain = _untraced(nobody)
    pid = nobody.daemon()
    status, out, err, _ = _run_and(nobody, lambda: os.kill(pid, signal.SIGKILL),
                                   "-o", nobody.work / "trace", "--shm-path", nobody.work / "shm")
    assert (status, out) == (plain.returncode, plain.stdout)
    assert f"pyust: the session daemon (pid {pid}) died while the program ran" in err
    assert "nothing for lttng-crash to recover" in err or "lttng-crash -x" in err, err


def test_daemon_killed_without_shm_path_says_how_to_recover_next_time(nobody):
    plain = _untraced(nobody)
    pid = nobody.daemon()
    status, out, err, _ = _run_and(nobody, lambda: os.killpg(pid, signal.SIGKILL),
                                   "-o", nobody.work / "trace")
    assert (status, out) == (plain.returncode, plain.stdout)
    assert "died while the program ran" in err
    assert "trace with `pyust run --shm-path DIR`" in err, err


def test_daemon_stopped_mid_run(nobody):
    """SIGSTOP of the session daemon while the program runs: the program ends
    as untraced, pyust run says at once (no wait for the stopped daemon) that
    the session was left recording and how to finish it; once the daemon
    continues, `lttng destroy` completes a readable trace."""
    plain = _untraced(nobody)
    pid = nobody.daemon()
    status, out, err, seconds = _run_and(nobody, lambda: os.kill(pid, signal.SIGSTOP),
                                         "-o", nobody.work / "trace", "--name", "stopped-mid-run")
    assert (status, out) == (plain.returncode, plain.stdout)
    assert seconds < 30
    line = next(line for line in err.splitlines() if "is stopped (SIGSTOP)" in line)
    assert f"`kill -CONT {pid}`" in line and "`lttng destroy stopped-mid-run`" in line, line
    os.kill(pid, signal.SIGCONT)
    destroy = nobody.run("lttng", "destroy", "stopped-mid-run")
    assert destroy.returncode == 0, destroy.stderr
    calls = [line for line in _events_of(nobody.work / "trace", nobody.pid())
             if "python:call" in line and 'name = "work"' in line]
    assert len(calls) > 1000


def test_daemon_stopped_before_run_refused_at_once(nobody):
    pid = nobody.daemon()
    os.kill(pid, signal.SIGSTOP)
    begin = time.monotonic()
    result = nobody.run(PYTHON, "-m", "pyust", "run", "-o", nobody.work / "trace", "--",
                        nobody.program)
    assert time.monotonic() - begin < 10
    assert result.returncode == 1
    assert result.stderr == (f"pyust: error: the session daemon (pid {pid}) is stopped "
                             f"(SIGSTOP): resume it with `kill -CONT {pid}`\n")
    assert result.stdout == ""
    assert not (nobody.work / "trace").exists()


def test_hook_alone_daemon_stopped_or_killed(nobody):
    """A program traced by the hook alone (`python -m pyust`, or the API)
    while its user's session daemon is stopped: LTTng-UST waits for the
    daemon's answer at most LTTNG_UST_REGISTER_TIMEOUT (3 s by default) when
    it loads, then the program runs as untraced. Killed while it records:
    the program runs on."""
    plain = _untraced(nobody)
    pid = nobody.daemon()
    os.kill(pid, signal.SIGSTOP)
    for timeout_ms, bound in ((None, 3.0 + 5), ("200", 0.2 + 5)):
        env = dict(nobody.env)
        if timeout_ms:
            env["LTTNG_UST_REGISTER_TIMEOUT"] = timeout_ms
        begin = time.monotonic()
        traced = nobody.run(PYTHON, "-m", "pyust", "--", nobody.program, env=env)
        seconds = time.monotonic() - begin
        assert (traced.returncode, traced.stdout, traced.stderr) == (
            plain.returncode, plain.stdout, plain.stderr)
        assert seconds < 2.0 + bound, seconds
    os.kill(pid, signal.SIGCONT)
    for args in (["create", "hook-alone", "--output", nobody.work / "trace"],
                 ["enable-event", "-u", "python:*"], ["start"]):
        assert nobody.run("lttng", *args).returncode == 0
    child = subprocess.Popen(nobody.argv(PYTHON, "-m", "pyust", "--", nobody.program),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=nobody.env, cwd=nobody.work)
    assert child.stdout.readline() == "ready\n"
    time.sleep(0.5)
    os.killpg(pid, signal.SIGKILL)
    out, err = child.communicate(timeout=RUN_TIMEOUT)
    assert (child.returncode, "ready\n" + out, err) == (plain.returncode, plain.stdout,
                                                         plain.stderr)


def test_hook_alone_without_any_daemon(tmp_path):
    """No session daemon at all (a mount namespace hides the root daemon's
    directory): the program runs as untraced, without waiting."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to hide the root session daemon")
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    env = child_env(LTTNG_HOME=str(tmp_path), HOME=str(tmp_path))

    def run(*argv):
        script = 'mount -t tmpfs none /var/run/lttng && exec "$@"'
        begin = time.monotonic()
        result = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", *argv],
                                capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env)
        return result, time.monotonic() - begin

    plain, plain_seconds = run(PYTHON, program)
    assert plain.returncode == 3, plain.stderr
    traced, seconds = run(PYTHON, "-m", "pyust", "--", program)
    assert (traced.returncode, traced.stdout, traced.stderr) == (
        plain.returncode, plain.stdout, plain.stderr)
    assert seconds < plain_seconds + 1.0


def test_root_daemon_warning_for_the_tracing_group():
    """A user of the tracing group records in the root session daemon, whose
    sessions record every user's python:* events: pyust run says so in one
    line. With a daemon of its own, no warning."""
    _need_nobody()
    try:
        import grp

        tracing = grp.getgrnam("tracing").gr_gid
    except KeyError:
        pytest.skip("no group tracing on this machine")
    member = Nobody(groups=(tracing,))
    try:
        result = member.run(PYTHON, "-m", "pyust", "run", "-o", member.work / "trace",
                            "--no-count", "--", member.program)
        assert result.returncode == 3, result.stderr
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1, result.stderr
        assert re.fullmatch(r"pyust: warning: this session runs in the root session daemon: "
                            r"root and every member of group tracing( \([^)]*\))? can record "
                            r"this program's python:\* events with sessions of their own",
                            warnings[0]), warnings
    finally:
        member.close()
    alone = Nobody()
    try:
        alone.daemon()
        result = alone.run(PYTHON, "-m", "pyust", "run", "-o", alone.work / "trace",
                           "--no-count", "--", alone.program)
        assert result.returncode == 3, result.stderr
        assert "warning" not in result.stderr, result.stderr
    finally:
        alone.close()
