"""pyust attach PID: tracing a Python process that is already running.

Each test starts a real process of the interpreter under test, without pyust on
its path (a program started as any other), attaches `python -m pyust attach` to
it, lets it work, detaches, and reads the trace back with babeltrace2. The
process counts its own calls; the trace of each window must hold exactly those,
and the process must go on as untraced (its output, its modules, its threads).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pyusttest.attach import (BUSY, NAMES, THREAD_NAME, end_program, finish_attach, start_attach,
                              start_program, start_users_program, ticks_by_thread, wait_attached,
                              window)
from pyusttest.environment import (PYTHON, PYUST_PATH, READER, child_env, python_version,
                                   user_site_env)
from pyusttest.traces import assert_balanced, read_trace

pytestmark = pytest.mark.skipif(
    python_version(PYTHON) < (3, 14) and shutil.which("gdb") is None,
    reason="attaching to Python 3.10 to 3.13 needs gdb (apt-get install gdb)")


def test_two_windows_record_exactly_the_calls_the_program_counts(tmp_path):
    """Attach, work, detach, attach again: each window's trace holds every tick()
    of each thread that the program counted in it, balanced, and nothing after the
    detach; the program ends as untraced, with no module or thread of pyust's."""
    process = start_program(tmp_path, BUSY)
    try:
        for _ in range(2):
            before, after, output, err = window(tmp_path, process)
            assert "detached from process" in err
            trace = read_trace(output)
            assert {e["vpid"] for e in trace.events} == {process.pid}
            ticks = ticks_by_thread(trace, tmp_path)
            for name in NAMES:
                assert after[name] - before[name] > 0
                assert ticks.get(THREAD_NAME[name], 0) == after[name] - before[name], (name, ticks)
            for events in trace.threads().values():
                assert_balanced(trace, events, closed=False)
        out = end_program(tmp_path, process)
    finally:
        if process.poll() is None:
            process.kill()
    # pyust's modules stay imported (a C extension cannot be unloaded), but its
    # threads are gone, and the program's own output is as untraced.
    lines = out.splitlines()
    assert lines[-1] == "end"
    assert lines[-2] == "threads ['MainThread']"


def test_detach_leaves_the_program_as_it_was(tmp_path):
    """After the detach: no hook (sys.getprofile / sys.monitoring tool), threading, os._exit
    and the exec functions unwrapped, sys.path as before, no file of ours in the process."""
    program = BUSY.replace('print("end", flush=True)', '''\
import threading as _t
print("profile", sys.getprofile() is None, flush=True)
mon = getattr(sys, "monitoring", None)
print("tools", [i for i in range(6) if mon and mon.get_tool(i)], flush=True)
print("bootstrap", _t.Thread._bootstrap_inner.__qualname__, flush=True)
print("exit", os._exit.__module__ if hasattr(os._exit, "__module__") else "", flush=True)
print("exec", os.execv.__module__, os.execve.__module__, flush=True)
print("path", [p for p in sys.path if p == PYUST_PATH], flush=True)
print("end", flush=True)''')
    process = start_program(tmp_path, program.replace("PYUST_PATH", repr(PYUST_PATH)))
    controls = set(Path(tempfile.gettempdir()).glob("pyust-attach-*"))
    try:
        window(tmp_path, process)
        # The control directory is gone, and the process holds no file of ours open.
        assert set(Path(tempfile.gettempdir()).glob("pyust-attach-*")) == controls
        open_files = [os.readlink(f"/proc/{process.pid}/fd/{fd}")
                      for fd in os.listdir(f"/proc/{process.pid}/fd")]
        assert not [f for f in open_files if "pyust" in f], open_files
        out = end_program(tmp_path, process)
    finally:
        if process.poll() is None:
            process.kill()
    assert "globals []" in out  # __main__'s namespace as it was
    assert "profile True" in out
    assert "tools []" in out
    assert "bootstrap Thread._bootstrap_inner" in out
    assert "exit posix" in out
    assert "exec posix posix" in out
    assert "path []" in out


ASYNC_SERVER = """\
import asyncio, os

def echo(line):
    return b"echo " + line

async def handle(reader, writer):
    line = await reader.readline()
    writer.write(b"pong\\n" if line.startswith(b"ping") else echo(line))
    await writer.drain()
    writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print("ready", flush=True)
    print(port, flush=True)
    async with server:
        while not os.path.exists("END"):
            await asyncio.sleep(3600) if not os.path.exists("END") else None

asyncio.run(main())
"""


def ask(port: int, text: str) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(text.encode() + b"\n")
        return connection.makefile().readline()


def test_asyncio_server_blocked_in_epoll(tmp_path):
    """A server waiting in epoll_wait runs no Python: pyust gets in at its next
    request, records the requests handled while attached (each answered as
    untraced), and gets out at the next one after Ctrl-C."""
    import threading

    script = tmp_path / "prog.py"
    script.write_text(ASYNC_SERVER)
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    process = subprocess.Popen([PYTHON, str(script)], stdout=subprocess.PIPE, text=True,
                               env=environment, cwd=tmp_path)
    pinging = threading.Event()

    def ping_while_asked():
        # Wakes the loop (pings are answered by the same handler, not counted).
        while not stopped.is_set():
            if pinging.is_set():
                assert ask(port, "ping") == "pong\n"
            time.sleep(0.1)

    stopped = threading.Event()
    try:
        assert process.stdout.readline().strip() == "ready"
        port = int(process.stdout.readline())
        pinger = threading.Thread(target=ping_while_asked, daemon=True)
        pinger.start()
        output = tmp_path / "trace"
        attach = start_attach(process.pid, output)
        pinging.set()
        wait_attached(attach)
        pinging.clear()
        time.sleep(0.3)  # the pings under way are answered
        for i in range(25):
            assert ask(port, f"hello {i}") == f"echo hello {i}\n"
        pinging.set()
        err = finish_attach(attach)
        pinging.clear()
        assert "detached from process" in err
        trace = read_trace(output)
        codes = trace.codes
        echoed = [e for e in trace.of("python:call")
                  if codes[e["fields"]["id"]]["qualname"] == "echo"]
        assert len(echoed) == 25
        for events in trace.threads().values():
            assert_balanced(trace, events, closed=False)
        assert ask(port, "after") == "echo after\n"
    finally:
        stopped.set()
        (tmp_path / "END").write_text("")
        process.kill()
        process.wait(timeout=30)


BLOCKED = """\
import os, sys
def after_read(data):
    return len(data)
r = int(sys.argv[1])
print("ready", flush=True)
data = os.read(r, 100)
total = sum(after_read(data) for _ in range(10))
print("read", total, flush=True)
print("pyust" in sys.modules, flush=True)
"""


def start_blocked(tmp_path: Path) -> tuple:
    """The BLOCKED program, waiting in read(2) on a pipe: (process, the pipe's write end)."""
    r, w = os.pipe()
    script = tmp_path / "prog.py"
    script.write_text(BLOCKED)
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    process = subprocess.Popen([PYTHON, str(script), str(r)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=environment,
                               pass_fds=(r,))
    os.close(r)
    assert process.stdout.readline().strip() == "ready"
    return process, w


def test_blocked_in_a_system_call(tmp_path):
    """A main thread blocked in read(2): attach says it waits, and attaches once the
    read returns; its calls after that are in the trace."""
    process, w = start_blocked(tmp_path)
    try:
        output = tmp_path / "trace"
        attach = start_attach(process.pid, output, "--duration", "1")
        line = attach.stderr.readline()
        assert "waiting for process" in line and "main thread to run Python" in line, line
        os.write(w, b"x" * 10)
        out, err = attach.communicate(timeout=120)
        assert attach.returncode == 0, err
        assert f"process {process.pid} exited during the recording" in err
        rest = process.stdout.read()
        assert rest.splitlines()[0] == "read 100"
        trace = read_trace(output)
        assert sum(1 for e in trace.of("python:call")
                   if trace.codes[e["fields"]["id"]]["qualname"] == "after_read") == 10
    finally:
        os.close(w)
        process.kill()
        process.wait(timeout=30)


def test_wait_ends_and_leaves_nothing_behind(tmp_path):
    """--wait on a process that stays blocked: one line, status 1, no trace kept; when
    the process runs Python again, nothing of pyust's starts in it."""
    process, w = start_blocked(tmp_path)
    # pyust's control directory goes there (not /tmp, where other runs make theirs).
    temporary = tmp_path / "tmp"
    temporary.mkdir(mode=0o755)
    try:
        output = tmp_path / "trace"
        attach = start_attach(process.pid, output, "--wait", "1",
                              env=child_env(TMPDIR=str(temporary)))
        out, err = attach.communicate(timeout=120)
        assert attach.returncode == 1
        assert err.strip().splitlines()[-1] == (
            f"pyust: error: process {process.pid}'s main thread ran no Python for 1 s "
            "(blocked in a system call or in C code), so pyust could not start there: try "
            "again, or give more time (--wait)")
        assert not output.exists()
        os.write(w, b"x" * 10)
        out, err = process.communicate(timeout=60)
        assert out.splitlines() == ["read 100", "False"]
        assert err == ""
        # On 3.14+ the request given to sys.remote_exec stayed: it only removed pyust's
        # control directory when the process ran Python again.
        assert list(temporary.iterdir()) == []
    finally:
        os.close(w)
        if process.poll() is None:
            process.kill()


def test_errors_are_one_line(tmp_path):
    """No such process; not a Python process: one line each, status 1."""
    def attach_fails(pid) -> str:
        result = subprocess.run([PYTHON, "-m", "pyust", "attach", str(pid)], capture_output=True,
                                text=True, env=child_env(), timeout=60)
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        return lines[0]

    free = 4_000_000
    while os.path.exists(f"/proc/{free}"):
        free += 1
    assert attach_fails(free) == f"pyust: error: no process with pid {free}"
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        sleep_exe = os.path.realpath(shutil.which("sleep"))
        assert attach_fails(sleeper.pid) == (
            f"pyust: error: process {sleeper.pid} is not a Python process (it runs {sleep_exe})")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_output_directory_others_can_change_is_refused(tmp_path):
    """pyust attach -o takes only a directory nobody but the caller (or root) can change,
    as pyust run -o (test_cli): a group-writable one is refused with one line, before
    anything is attached (issue 26; before: the trace went there)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o770)
    process = start_program(tmp_path, BUSY)
    try:
        result = subprocess.run([PYTHON, "-m", "pyust", "attach", str(process.pid), "-o",
                                 str(shared), "--duration", "0.1"], capture_output=True,
                                text=True, env=child_env(), timeout=60)
        assert result.returncode == 2, result.stderr
        assert result.stderr == (f"pyust: error: --output {shared} is writable by its group "
                                 "(mode 0770), who could change what is in it: give a "
                                 "directory of your own\n")
        assert list(shared.iterdir()) == []
    finally:
        (tmp_path / "END").write_text("")
        process.communicate(timeout=60)


def test_another_users_process_is_refused(tmp_path):
    """A user attaching to a process of another user: one line naming the fix."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root (to run the attach as nobody) and setpriv")
    process = start_program(tmp_path, BUSY)
    try:
        # Debian's interpreter runs pyust attach: nobody cannot run one under /root
        # (pyenv's), and the refusal comes before anything depends on the version.
        result = subprocess.run(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
             READER, "-m", "pyust", "attach", str(process.pid)],
            capture_output=True, text=True, env=child_env(HOME="/tmp"), timeout=60)
        assert result.returncode == 1
        assert result.stderr.strip() == (
            f"pyust: error: process {process.pid} runs as user root: run pyust attach as that "
            "user or as root")
    finally:
        (tmp_path / "END").write_text("")
        process.communicate(timeout=60)


# Root attaching to another user's process (issue 26): that user may plant what it
# likes wherever it can write, and write what it likes as the process's answers.

# The names of the files root's attach writes in its control directory.
ROOTS_FILES = ("step.py", "step.py.part", "trampoline.py", "trampoline.py.part",
               "trampoline.bin", "trampoline.bin.part")

PLANT_LINKS = """\
import glob, os, sys
victim, temp, names = sys.argv[1], sys.argv[2], sys.argv[3:]
planted = []
for control in glob.glob(os.path.join(temp, "pyust-attach-*")):
    for where in (control, os.path.join(control, "answers")):
        if os.access(where, os.W_OK):
            for name in names:
                path = os.path.join(where, name)
                if os.path.lexists(path):
                    os.rename(path, path + ".moved")
                os.symlink(victim, path)
                planted.append(path)
print(planted)
"""


def test_root_writes_nothing_through_another_users_links(tmp_path, local_user):
    """While root is attached to another user's process, that user plants links to a
    root-only file wherever it can write in the control directory, under every name
    root writes there: the detach writes nothing through them, and the file keeps its
    text and its mode."""
    victim = tmp_path / "root-only"
    victim.write_text("root's own\n")
    victim.chmod(0o600)
    process = start_users_program(local_user, BUSY)
    try:
        attach = start_attach(process.pid, tmp_path / "trace")
        wait_attached(attach)
        planted = local_user.run(PYTHON, "-c", PLANT_LINKS, victim, tempfile.gettempdir(),
                                 *ROOTS_FILES)
        assert planted.returncode == 0 and "pyust-attach-" in planted.stdout, planted
        attach.send_signal(signal.SIGINT)  # the detach writes the step again
        out, err = attach.communicate(timeout=120)
        assert victim.read_text() == "root's own\n"
        assert stat.S_IMODE(victim.stat().st_mode) == 0o600
        assert attach.returncode == 0, err
        assert f"detached from process {process.pid}" in err
    finally:
        (local_user.home / "END").write_text("")
        process.communicate(timeout=60)


# A program of the local user's that answers for itself: a thread plants its answer
# (the mode in argv[2]) in every control directory it can write, again whenever it is
# gone, and makes result-start.part a directory so that pyust's own answer cannot be
# written; the main thread waits in read(2) until the step is there.
FORGED_ANSWER = """\
import glob, os, sys, threading, time
temp, mode, secret = sys.argv[1], sys.argv[2], sys.argv[3]
ANSWERS = {
    "file": repr({"error": "forged\\x1b]0;owned\\x07\\x1b[2J\\rroot# \\u202e"}),
    "big": " " * (1 << 20) + repr({"ok": True, "backend": "forged"}),
}
r, w = os.pipe()

def plant():
    released = False
    while True:
        for control in glob.glob(os.path.join(temp, "pyust-attach-*")):
            for where in (control, os.path.join(control, "answers")):
                if not os.access(where, os.W_OK):
                    continue
                answer = os.path.join(where, "result-start")
                try:
                    os.mkdir(answer + ".part")
                except OSError:
                    pass
                if not os.path.lexists(answer):
                    if mode == "link":
                        os.symlink(secret, answer)
                    else:
                        with open(answer + ".forged", "w") as f:
                            f.write(ANSWERS[mode])
                        os.replace(answer + ".forged", answer)
                if not released and os.path.exists(os.path.join(control, "step.py")):
                    released = True
                    os.write(w, b"x")
        time.sleep(0.002)

threading.Thread(target=plant, daemon=True).start()
print("ready", flush=True)
os.read(r, 1)
while True:
    time.sleep(0.01)
"""


def _owner(path: Path) -> int | None:
    """path's owner, or None when it is gone."""
    try:
        return path.lstat().st_uid
    except FileNotFoundError:
        return None


@pytest.mark.parametrize("mode", ["link", "file", "big"])
def test_another_users_answer_is_read_as_data(tmp_path, local_user, mode):
    """Root attaching to another user's process that forges its answer: a link (to a
    root-only file) is not followed, a file of more than 64 KiB is not read, and the
    text of a forged error reaches the terminal escaped: one line, status 1 each, and
    no control directory left."""
    secret = tmp_path / "root-only"
    secret.write_text(repr({"error": "root's secret"}))
    secret.chmod(0o600)
    controls = set(Path(tempfile.gettempdir()).glob("pyust-attach-*"))
    process = start_users_program(local_user, FORGED_ANSWER, tempfile.gettempdir(), mode,
                                  secret)
    try:
        attach = start_attach(process.pid, tmp_path / "trace", "--duration", "1")
        out, err = attach.communicate(timeout=120)
        # Nothing of root's stays, although the process goes on writing there: the control
        # directory goes at once (gdb's pending call: 3.10 to 3.13); on 3.14+, where the
        # step that sys.remote_exec scheduled is still to run, it becomes the user's, for
        # that step to remove (what the user's own process then puts there is theirs).
        for _ in range(200):
            left = {path for path in Path(tempfile.gettempdir()).glob("pyust-attach-*")
                    if path not in controls and _owner(path) not in (local_user.uid, None)}
            if not left:
                break
            time.sleep(0.05)
        assert not left
    finally:
        process.kill()
        process.communicate(timeout=60)
        for path in set(Path(tempfile.gettempdir()).glob("pyust-attach-*")) - controls:
            if _owner(path) == local_user.uid:  # the user's own, once root left it
                shutil.rmtree(path, ignore_errors=True)
    assert "root's secret" not in err
    assert attach.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.isprintable(), repr(line)
    if mode == "link":
        assert re.fullmatch(rf"pyust: error: cannot read the answer of process {process.pid}: "
                            r"\S+/answers/result-start is a symbolic link", line), line
    elif mode == "file":
        assert line == (f"pyust: error: process {process.pid}: forged\\x1b]0;owned\\x07"
                        "\\x1b[2J\\rroot# \\u202e"), line
    else:
        assert re.fullmatch(rf"pyust: error: cannot read the answer of process {process.pid}: "
                            r"\S+/answers/result-start is larger than 64 KiB", line), line
    assert not (tmp_path / "trace").exists()


def test_root_runs_nothing_of_another_users_interpreter(tmp_path, local_user):
    """A local user's process runs a copy of the interpreter, ~/bin/python3 (no version in
    its name, no libpython); the user then puts a script there instead that exports
    "_PyRuntime" in a comment and leaves a mark when run. Root's attach learns the
    version as data, from the executable the process runs: it attaches, and nothing
    ran the script."""
    maps = subprocess.run([PYTHON, "-c", "print(open('/proc/self/maps').read())"],
                          capture_output=True, text=True, timeout=60).stdout
    if "/libpython" in maps:
        pytest.skip(f"{PYTHON} maps libpython: its version is in the library's name")
    real = os.path.realpath(PYTHON)
    python3 = local_user.home / "bin" / "python3"
    mark = local_user.home / "ran"

    def users(path: Path, mode: int) -> None:
        os.chown(path, local_user.uid, local_user.gid)
        path.chmod(mode)

    python3.parent.mkdir()
    users(python3.parent, 0o755)
    shutil.copyfile(real, python3)
    users(python3, 0o755)
    process = start_users_program(local_user, BUSY, python=python3)
    try:
        python3.unlink()  # the process runs on, from the file it opened
        python3.write_text(f'#!/bin/sh\n# _PyRuntime\nid -u > {mark}\nexec {real} "$@"\n')
        users(python3, 0o755)
        attach = start_attach(process.pid, tmp_path / "trace", "--duration", "0.5")
        out, err = attach.communicate(timeout=120)
        assert not mark.exists(), f"the script ran, as user {mark.read_text().strip()}"
        assert attach.returncode == 0, err
        assert f"detached from process {process.pid}" in err
    finally:
        (local_user.home / "END").write_text("")
        process.communicate(timeout=60)


def test_target_exiting_while_recorded(tmp_path):
    """The process ends while attached: the trace up to its end is readable, the
    summary says so, status 0."""
    process = start_program(tmp_path, BUSY)
    output = tmp_path / "trace"
    attach = start_attach(process.pid, output)
    wait_attached(attach)
    (tmp_path / "GO").write_text("")
    time.sleep(0.3)
    end_program(tmp_path, process)
    out, err = attach.communicate(timeout=120)
    assert attach.returncode == 0, err
    assert f"process {process.pid} exited during the recording" in err
    ticks = ticks_by_thread(read_trace(output), tmp_path)
    assert ticks["MainThread"] > 0 and ticks["worker-0"] > 0


def test_an_interpreter_without_pyust_is_named(tmp_path):
    """A Python that cannot load pyust's native hook: the line names the set-up command."""
    others = []
    try:
        import subprocess as sp
        root = sp.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        others = sorted(Path(root, "versions").glob("3.1[0-9]*/bin/python3"))
    except OSError:
        pass
    mine = python_version(PYTHON)
    candidates = [p for p in others if python_version(str(p)) != mine
                  and (3, 10) <= python_version(str(p)) < (3, 14)
                  and subprocess.run([str(p), "-c", "import pyust"], capture_output=True,
                                     env={"PATH": os.environ["PATH"]}).returncode != 0]
    if not candidates:
        pytest.skip("no other CPython 3.10-3.13 without pyust installed (pyenv) on this machine")
    python = str(candidates[0])
    process = start_program(tmp_path, BUSY, python=python)
    try:
        result = subprocess.run([PYTHON, "-m", "pyust", "attach", str(process.pid), "-o",
                                 str(tmp_path / "trace")], capture_output=True, text=True,
                                env=child_env(), timeout=120)
        assert result.returncode == 1
        assert "install pyust for its interpreter: scripts/setup --python" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert not (tmp_path / "trace").exists()
    finally:
        (tmp_path / "END").write_text("")
        out = process.communicate(timeout=60)[0]
    assert "modules []" in out  # nothing of pyust's stayed imported


def test_the_attach_point_waits_for_the_session(tmp_path):
    """LTTng-UST, loaded into the process by the attach, registers with the session daemon
    in the background; with LTTNG_UST_REGISTER_TIMEOUT=0 in the process's environment it
    does not wait for that, and the session reached the process only after pyust attach
    said it recorded: the window's first ticks were not in the trace (before: a fifth to a
    half of them). The attach point waits for the session. (The process imports the pyust
    under test from its user site directory.)"""
    env, _ = user_site_env(tmp_path, LTTNG_UST_REGISTER_TIMEOUT="0")
    process = start_program(tmp_path, BUSY, env=env)
    try:
        before, after, output, err = window(tmp_path, process)
        assert "before the session recorded it" not in err
        ticks = ticks_by_thread(read_trace(output), tmp_path)
        for name in NAMES:
            assert ticks.get(THREAD_NAME[name], 0) == after[name] - before[name], (name, ticks)
        end_program(tmp_path, process)
    finally:
        if process.poll() is None:
            process.kill()
