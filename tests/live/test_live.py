"""`pyust run --live` through a relay daemon on loopback, `pyust top` on the live
session, and the relay daemon's copy of the trace read by `pyust report`; another user's
relay daemon refused, and a relay daemon lost during the session (issue 26)."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from pyusttest.attach import (BUSY, NAMES, end_program, finish_attach, start_attach, start_program,
                              wait_attached, wait_counts_settled)
from pyusttest.environment import PYTHON, child_env, python_version
from pyusttest.live import (TOP_TIMEOUT, LiveRun, Relayd, RelayHost, destroy_when_answered,
                            free_ports, listens, needs_network_namespaces, plugin_path, pyust)
from pyusttest.sessions import lttng, session_names, unique_name

# How long a test waits for a `pyust run` or `pyust attach` whose relay daemon was lost:
# bounded, so that without the fix the test fails (TCP would give up after 15 minutes).
LOST_RELAY_WAIT = 60
NEEDS_ATTACH = pytest.mark.skipif(
    python_version(PYTHON) < (3, 14) and shutil.which("gdb") is None,
    reason="attaching to Python 3.10 to 3.13 needs gdb (apt-get install gdb)")


@pytest.fixture
def live_run(relayd, tmp_path):
    run = LiveRun(relayd, tmp_path)
    yield run
    if run.process.poll() is None:
        run.finish()


def _profile_row(report: str, label: str) -> list:
    rows = [line.split() for line in report.splitlines() if f" {label} " in f" {line} "]
    assert len(rows) == 1, report
    return rows[0]


def test_top_shows_the_hot_function_and_the_relayd_keeps_the_whole_trace(relayd, live_run):
    url = live_run.wait_for(r"pyust top (net://\S+)").group(1)
    assert url == f"net://localhost:{relayd.live}/host/{socket.gethostname()}/" \
                  f"{live_run.name}"
    pid = live_run.pid()

    # The relay daemon lists the session.
    listed = pyust("top", relayd.live_root, timeout=TOP_TIMEOUT)
    assert listed.returncode == 0, listed.stderr
    assert url.replace("localhost", "127.0.0.1") in listed.stdout

    top = pyust("top", url, "--count", "2", "--interval", "0.5", "--rows", "5", "--pid", pid,
                timeout=TOP_TIMEOUT)
    assert top.returncode == 0, top.stderr
    tables = top.stdout.split("pyust top: ")[1:]
    assert len(tables) == 2, top.stdout
    assert "\x1b[" not in top.stdout  # not a terminal: plain successive tables
    for table in tables:
        header = table.splitlines()[2].split()
        assert header[:4] == ["%self", "self_ms", "total_ms", "ncalls"], table
    # hot() runs in every interval: it is in the last table with calls and self time.
    row = next(line.split() for line in tables[-1].splitlines() if line.endswith(
        tuple(f"{module}:hot  {where}" for module in ("?", "__main__")
              for where in ("(named by its call)", f"{live_run.program}:3"))))
    assert float(row[0]) > 0 and int(row[3]) > 0, tables[-1]

    status, printed, stderr = live_run.finish()
    assert status == 0, stderr
    calls = int(printed[1])
    trace = re.search(r"pyust: trace in (\S+): (\d+) events recorded, (\d+) discarded", stderr)
    assert trace, stderr
    path = trace.group(1)
    assert path.startswith(str(relayd.output) + "/"), path
    assert int(trace.group(3)) == 0

    # The relay daemon's copy is complete: every call of hot(), named, from the first.
    report = pyust("report", path, "--pid", pid, "--timeout", "60", timeout=TOP_TIMEOUT * 3)
    assert report.returncode == 0, report.stderr
    row = _profile_row(report.stdout, "__main__:hot")
    assert int(row[0]) == calls, report.stdout
    assert "__main__:<module>" in report.stdout


@NEEDS_ATTACH
@pytest.mark.parametrize("mode", ["standard", "fast"])
def test_attach_live_shows_top_while_the_relayd_keeps_every_call(relayd, tmp_path, mode):
    """`pyust attach PID --live`: `pyust top` reads the process while it is recorded, and
    the relay daemon's trace holds every call of tick() that the process's threads
    counted in the window, as a local attach's does. (In the fast mode the live timer's
    flushes leave gaps between packets that a batch's older records fall into.)"""
    name = unique_name("attach-live")
    process = start_program(tmp_path, BUSY)
    attach = None
    try:
        before = wait_counts_settled(tmp_path, None)
        attach = start_attach(process.pid, None, "--live", "--relayd", relayd.url,
                              "--live-port", str(relayd.live), "--name", name,
                              *(["--fast"] if mode == "fast" else []))
        err = wait_attached(attach)
        url = re.search(r"pyust top (net://\S+)", err).group(1)
        assert url == f"net://localhost:{relayd.live}/host/{socket.gethostname()}/{name}"
        (tmp_path / "GO").write_text("")
        top = pyust("top", url, "--count", "2", "--interval", "0.5", "--rows", "5",
                    timeout=TOP_TIMEOUT)
        (tmp_path / "GO").unlink()
        after = wait_counts_settled(tmp_path, before)
        err += finish_attach(attach)
        end_program(tmp_path, process)
    finally:
        for child in (process, attach):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()
        if name in session_names():
            lttng("destroy", name, check=False)
    assert top.returncode == 0, top.stderr
    tables = top.stdout.split("pyust top: ")[1:]
    assert len(tables) == 2, top.stdout
    rows = [line.split() for line in tables[-1].splitlines()[3:]]
    rows = [row for row in rows if len(row) > 6]
    if mode == "standard":  # python:call names its function
        tick = [row for row in rows if row[6].endswith(":tick")]
        assert len(tick) == 1 and int(tick[0][3]) > 0, tables[-1]
    else:  # records name a code id only: top names those whose python:code it read, and
        # shows the others by their id, never as a name ("?:?") that no call carried
        assert sum(int(row[3]) for row in rows) > 0, tables[-1]
        assert not [row for row in rows if row[6].startswith("?:")], tables[-1]

    summary = re.search(r"pyust: trace in (\S+): (\d+) events recorded, (\d+) discarded", err)
    assert summary and summary.group(3) == "0", err
    path = summary.group(1)
    assert path.startswith(f"{relayd.output}/"), path
    assert "detached from process" in err
    # Read by pyust report (babeltrace2 and the C++ sink: the fast mode's window holds some
    # million events, too many for the bt2 reader in time on a slow machine).
    report = pyust("report", path, "--pid", process.pid, "--timeout", "120",
                   timeout=TOP_TIMEOUT * 5)
    assert report.returncode == 0, report.stderr
    assert all(after[thread] > before[thread] for thread in NAMES)
    counted = sum(after[thread] - before[thread] for thread in NAMES)
    assert int(_profile_row(report.stdout, "__main__:tick")[0]) == counted, report.stdout


def test_top_format_on_a_finished_trace_and_its_parameters(relayd, live_run, tmp_path):
    live_run.pid()
    _, _, stderr = live_run.finish()
    path = re.search(r"pyust: trace in (\S+):", stderr).group(1)
    plugin = plugin_path()
    result = subprocess.run(["babeltrace2", *plugin, path, "-c", "sink.pyust.report",
                             "-p", 'format="top",rows=3'],
                            capture_output=True, text=True, timeout=TOP_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("pyust top: ") >= 1
    assert "__main__:hot" in result.stdout
    for bad in ('format="profile",period=1000', 'format="top",period=0',
                'format="top",count=-1'):
        result = subprocess.run(["babeltrace2", *plugin, path, "-c", "sink.pyust.report",
                                 "-p", bad], capture_output=True, text=True,
                                timeout=TOP_TIMEOUT)
        assert result.returncode != 0 and "bad parameter" in result.stderr, (bad, result)


def test_top_bad_url_and_no_relayd():
    bad = pyust("top", "http://example.com/x", timeout=TOP_TIMEOUT)
    assert bad.returncode == 2 and bad.stderr.startswith("pyust: error: bad URL"), bad.stderr
    (port,) = free_ports(1)
    assert not listens(port)
    nobody = pyust("top", f"net://127.0.0.1:{port}/host/h/s", "--count", "1",
                   timeout=TOP_TIMEOUT)
    assert nobody.returncode == 1, nobody.stderr
    assert nobody.stderr.count("\n") == 1 and "cannot list the live sessions" in nobody.stderr


def test_run_live_usage_errors(relayd, tmp_path):
    program = tmp_path / "p.py"
    program.write_text("pass\n")
    without_live = pyust("run", "--relayd", relayd.url, "--", program)
    assert without_live.returncode == 2 and "add --live" in without_live.stderr
    with_output = pyust("run", "--live", "--relayd", relayd.url, "-o", tmp_path / "t", "--",
                        program)
    assert with_output.returncode == 2 and "relay daemon writes the trace" in with_output.stderr
    kernel = pyust("run", "--live", "--relayd", relayd.url, "--kernel", "--", program)
    assert kernel.returncode == 2 and "--kernel with --live" in kernel.stderr
    bad_url = pyust("run", "--live", "--relayd", "file:///tmp/x", "--", program)
    assert bad_url.returncode == 2 and "expected net://HOST" in bad_url.stderr
    # pyust attach checks the same options, before it looks at the process.
    for args, error in ((["--relayd", relayd.url], "add --live"),
                        (["--live", "--relayd", relayd.url, "-o", tmp_path / "t"],
                         "relay daemon writes the trace"),
                        (["--live", "--relayd", relayd.url, "--kernel"], "--kernel with --live"),
                        (["--live", "--live-timer", "0"], "--live-timer must be")):
        attach = pyust("attach", "1", *args)
        assert attach.returncode == 2 and error in attach.stderr, (args, attach.stderr)


def test_run_live_refuses_another_users_relayd_on_loopback(local_user, tmp_path):
    """Without --relayd, root's `pyust run --live` streamed to whatever listened on
    127.0.0.1:5342: another user's lttng-relayd received root's trace. Now it refuses,
    in one line naming the owner and --relayd, and the user's daemon gets nothing."""
    ports = (5342, 5343, 5344)
    if any(listens(port) for port in ports):
        pytest.skip("a relay daemon already listens on 127.0.0.1:5342-5344 (this test "
                    "starts another user's there)")
    traces = local_user.home / "traces"
    daemon = local_user.spawn("lttng-relayd", "-o", traces, "-C", "tcp://127.0.0.1:5342",
                              "-D", "tcp://127.0.0.1:5343", "-L", "tcp://127.0.0.1:5344",
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not all(listens(port) for port in ports):
        assert daemon.poll() is None and time.monotonic() < deadline, "lttng-relayd did not start"
        time.sleep(0.05)
    program = tmp_path / "p.py"
    program.write_text("print('ran')\n")
    name = unique_name("foreign-relayd")
    try:
        result = pyust("run", "--live", "--name", name, "--", program)
    finally:
        if name in session_names():
            lttng("destroy", name, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"user {local_user.name} (uid {local_user.uid})" in result.stderr
    assert "--relayd URL" in result.stderr and "ran" not in result.stdout
    assert not traces.exists() or not any(traces.rglob("*")), list(traces.rglob("*"))


LOST_RELAY_PROGRAM = """\
import sys, time

def work():
    return sum(range(1000))

print("started", flush=True)
end = time.monotonic() + 3
while time.monotonic() < end:
    work()
    time.sleep(0.001)
sys.exit(3)
"""


@pytest.fixture
def relay_host(tmp_path):
    needs_network_namespaces()
    host = RelayHost(tmp_path)
    try:
        host.start()
        yield host
    finally:
        host.stop()


def _lost_relay_line(stderr: str) -> float:
    """The seconds into the session at which the summary says the relay was lost."""
    lost = re.search(r"^pyust: the relay daemon stopped answering at [\d:]+ \(([\d.]+) s into "
                     r"the session\): pyust cut the connection to it after 2 s without "
                     r"progress; the trace it holds lacks the events from about then on$",
                     stderr, re.MULTILINE)
    assert lost, stderr
    return float(lost.group(1))


def test_run_live_ends_soon_when_the_relay_host_is_cut_off(relay_host, tmp_path):
    """The link to the relay daemon's host goes down 1 s into a 3 s program. Before,
    pyust run returned 931 s later (TCP's retransmission limit), the root session daemon
    answering no one meanwhile. Now the program's status comes back within seconds,
    the summary says from when the relay's trace is incomplete, no session is left and
    the session daemon answers."""
    name = unique_name("cut-relay")
    program = tmp_path / "prog.py"
    program.write_text(LOST_RELAY_PROGRAM)
    run = subprocess.Popen([PYTHON, "-m", "pyust", "run", "--live", "--relayd", relay_host.url,
                            "--relayd-timeout", "2", "--name", name, "--", str(program)],
                           env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        assert run.stdout.readline() == "started\n"
        time.sleep(1)
        relay_host.cut()
        _, stderr = run.communicate(timeout=LOST_RELAY_WAIT)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        relay_host.stop()  # lets a session daemon that still waits go
        destroy_when_answered(name)
    assert run.returncode == 3, stderr
    assert 0 < _lost_relay_line(stderr) < 3.5
    assert "Traceback" not in stderr
    assert name not in session_names()


@NEEDS_ATTACH
def test_attach_live_ends_soon_when_the_relayd_stops(tmp_path):
    """The relay daemon stops (SIGSTOP) while `pyust attach --live` records: the attach
    still ends after its --duration, detached, with the summary saying from when the
    relay's trace is incomplete, and no session left; before, it waited for the relay
    daemon forever, and the session daemon with it."""
    relay = Relayd(tmp_path / "relayd")
    relay.start()
    name = unique_name("stopped-relay")
    process = start_program(tmp_path, BUSY)
    attach = None
    try:
        (tmp_path / "GO").write_text("")  # the program's threads call tick() in a loop
        attach = start_attach(process.pid, None, "--live", "--relayd", relay.url,
                              "--live-port", str(relay.live), "--relayd-timeout", "2",
                              "--duration", "1", "--name", name)
        wait_attached(attach)
        relay.process.send_signal(signal.SIGSTOP)
        _, stderr = attach.communicate(timeout=LOST_RELAY_WAIT)
    finally:
        if attach is not None and attach.poll() is None:
            attach.kill()
            attach.wait()
        relay.stop()  # continued first: a session daemon that still waits goes on
        destroy_when_answered(name)
        (tmp_path / "GO").unlink()
        end_program(tmp_path, process)
    assert attach.returncode == 0, stderr
    assert 0 < _lost_relay_line(stderr) < 60
    assert f"detached from process {process.pid}" in stderr
    assert name not in session_names()


def test_run_live_names_its_trace_directory_with_one_date(relayd, tmp_path):
    """Without --name, a live session is pyust-PID, which the relay daemon dates: its directory
    is pyust-PID-DATE-TIME (it was pyust-PID-DATE-TIME-DATE-TIME)."""
    program = tmp_path / "short.py"
    program.write_text("print(sum(range(10)))\n")
    run = pyust("run", "--live", "--relayd", relayd.url, "--live-port", str(relayd.live), "--",
                str(program), timeout=LOST_RELAY_WAIT)
    assert (run.returncode, run.stdout) == (0, "45\n"), run.stderr
    live = re.search(r"pyust: live session (\S+):", run.stderr)
    trace = re.search(r"pyust: trace in (\S+):", run.stderr)
    assert live and trace, run.stderr
    assert re.fullmatch(r"pyust-\d+", live.group(1)), run.stderr
    assert re.fullmatch(re.escape(live.group(1)) + r"-\d{8}-\d{6}",
                        trace.group(1).rstrip("/").rsplit("/", 1)[-1]), run.stderr
