"""`pyust run --kernel` end to end: system calls on top of the Python stack
that made them, time off the CPU as its own frame, and a user-space trace that
stays complete when kernel events cannot be recorded. Real perf (or LTTng's
kernel tracer where lttng-modules is loaded), LTTng and babeltrace2."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, PYUST_PATH, child_env
from pyusttest.run import run_pyust
from pyusttest.traces import folded

PROGRAM = """\
    import os, sys, time

    def writer(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        for i in range(5):
            os.write(fd, b"x" * 4096)
        os.close(fd)

    def sleeper():
        time.sleep(0.05)

    def main():
        writer(sys.argv[1])
        sleeper()
        with open(sys.argv[2], "w") as pid_file:
            pid_file.write(str(os.getpid()))

    main()
"""

WRITER = "__main__:<module>;__main__:main;__main__:writer"
SLEEPER = "__main__:<module>;__main__:main;__main__:sleeper"


def kernel_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "kernel events need root: run this suite as root"
    if not os.path.exists("/proc/lttng") and shutil.which("perf") is None:
        return "neither lttng-modules nor perf (apt-get install linux-perf) is here"
    return None


def traced(tmp_path: Path, *options, env=None, user_argv=()) -> tuple:
    """`pyust run [options] -o TRACE -- program`: (result, trace, pid)."""
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(PROGRAM))
    trace = tmp_path / "trace"
    pid_file = tmp_path / "pid"
    args = ["run", *options, "-o", str(trace), "--", str(program), str(tmp_path / "out.bin"),
            str(pid_file)]
    if user_argv:
        result = subprocess.run([*user_argv, PYTHON, "-m", "pyust", *args], capture_output=True,
                                text=True, timeout=120, env=env or child_env())
    else:
        result = run_pyust(args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result, trace, int(pid_file.read_text())


def report(trace: Path, pid: int, fmt: str, env=None) -> str:
    result = run_pyust(["report", str(trace), "--pid", str(pid), "--format", fmt], env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def chrome_events(text: str) -> tuple[list, dict]:
    """A Chrome trace's events in a fixed order, with the rest of the document: two system calls
    of different threads that end at the same nanosecond come out of babeltrace2's muxer in the
    order of their streams, which each conversion numbers its own way (seen in CI: madvise and
    rt_sigprocmask swapped)."""
    document = json.loads(text)
    events = document.pop("traceEvents")
    return sorted(events, key=lambda event: json.dumps(event, sort_keys=True)), document


@pytest.fixture(scope="module")
def kernel_trace(tmp_path_factory):
    reason = kernel_unavailable()
    if reason:
        pytest.skip(reason)
    tmp_path = tmp_path_factory.mktemp("kernel")
    result, trace, pid = traced(tmp_path, "--kernel")
    return result, trace, pid


def test_system_calls_on_the_python_stack(kernel_trace):
    result, trace, pid = kernel_trace
    assert "pyust: kernel events" in result.stderr, result.stderr
    if "(perf" in result.stderr:
        # The offset LTTng wrote (CTF 1.8 or 2), not one measured at the end.
        assert "clock aligned to LTTng's" in result.stderr, result.stderr
    stacks = folded(report(trace, pid, "folded"))
    assert WRITER + ";openat" in stacks, sorted(stacks)
    assert WRITER + ";write" in stacks, sorted(stacks)
    assert WRITER + ";close" in stacks, sorted(stacks)
    assert stacks[WRITER + ";write"] > 0


def test_off_cpu_is_its_own_frame(kernel_trace):
    _, trace, pid = kernel_trace
    stacks = folded(report(trace, pid, "folded"))
    off_cpu = {stack: ns for stack, ns in stacks.items()
               if stack.startswith(SLEEPER + ";") and stack.endswith(";[off-cpu]")}
    assert off_cpu, sorted(stacks)
    # time.sleep(0.05): about 50 ms asleep, inside the system call that slept
    # (SLEEPER;clock_nanosleep;[off-cpu]). On a busy machine the thread may also be
    # preempted while it runs Python: then [off-cpu] stands right under sleeper, with no
    # system call between. Nothing else may stand there.
    asleep = {stack: ns for stack, ns in off_cpu.items()
              if stack.count(";") == SLEEPER.count(";") + 2}
    preempted = {stack: ns for stack, ns in off_cpu.items()
                 if stack.count(";") == SLEEPER.count(";") + 1}
    assert asleep.keys() | preempted.keys() == off_cpu.keys(), off_cpu
    assert 45e6 <= sum(asleep.values()) <= 500e6, off_cpu


def test_durations_nest(kernel_trace):
    """In the Chrome trace, each of the five writes lies inside writer()'s frame,
    and writer() inside main(): user space and kernel on one timeline."""
    _, trace, pid = kernel_trace
    events = json.loads(report(trace, pid, "chrome"))["traceEvents"]
    frames = [e for e in events if e.get("ph") == "X" and e["pid"] == pid]
    (writer,) = [e for e in frames if e["name"] == "__main__:writer"]
    (main,) = [e for e in frames if e["name"] == "__main__:main"]
    writes = [e for e in frames if e["name"] == "write" and e["cat"] == "kernel"
              and writer["ts"] <= e["ts"] <= writer["ts"] + writer["dur"]]
    assert len(writes) == 5, writes
    for event in writes + [writer]:
        outer = main if event is writer else writer
        assert outer["ts"] <= event["ts"], (outer, event)
        assert event["ts"] + event["dur"] <= outer["ts"] + outer["dur"] + 0.001, (outer, event)
    # The profile names the system calls as functions of the kernel.
    assert "(kernel)" in report(trace, pid, "profile")



def convert_with(trace: Path, recordings: Path, converter: str) -> Path:
    """A copy of trace whose kernel events are recordings converted again by converter
    (pyust.kernel's "perf" or "pyust"), on the clock pyust run aligned them to."""
    copy = trace.parent / f"{trace.name}-{converter}"
    shutil.copytree(trace, copy)
    script = textwrap.dedent("""\
        import os, sys
        from pyust import kernel
        trace, recordings = sys.argv[1:]
        offset, _ = kernel.lttng_clock_offset(trace)
        for name, target in (("syscalls", kernel.PERF_DIR), ("sched", kernel.PERF_SCHED_DIR)):
            perf = kernel._Perf(recordings, name, target)
            if os.path.exists(perf.data):
                print(perf.convert(trace, offset))
        """)
    result = subprocess.run([PYTHON, "-c", script, str(copy), str(recordings)],
                            capture_output=True, text=True, timeout=300,
                            env=child_env(PYUST_PERF_CONVERT=converter))
    assert result.returncode == 0, result.stderr
    return copy


def skip_unless_perf_records():
    """Skips, saying why, where perf cannot record kernel events or is not the recorder
    (lttng-modules loaded: LTTng's kernel tracer records them)."""
    reason = kernel_unavailable()
    if reason:
        pytest.skip(reason)
    if os.path.exists("/proc/lttng"):
        pytest.skip("lttng-modules is loaded: LTTng's kernel tracer records, not perf")


def test_both_conversions_give_the_same_analysis(tmp_path):
    """One perf recording, converted by perf data convert --to-ctf and by pyust's writer
    from perf script: the same folded stacks and the same Chrome trace."""
    skip_unless_perf_records()
    recordings = tmp_path / "perf"
    result, trace, pid = traced(tmp_path, "--kernel",
                                env=child_env(PYUST_PERF_KEEP=str(recordings)))
    if "through perf data convert" not in result.stderr:
        pytest.skip(f"perf data convert --to-ctf does not work here: {result.stderr.strip()}")
    assert (recordings / "syscalls.data").exists(), result.stderr
    by_perf = convert_with(trace, recordings, "perf")
    by_pyust = convert_with(trace, recordings, "pyust")
    stacks = folded(report(by_pyust, pid, "folded"))
    assert WRITER + ";write" in stacks, sorted(stacks)
    assert any(stack.endswith(";[off-cpu]") for stack in stacks), sorted(stacks)
    assert stacks == folded(report(by_perf, pid, "folded"))
    assert chrome_events(report(by_pyust, pid, "chrome")) == \
        chrome_events(report(by_perf, pid, "chrome"))


def test_without_ctf_conversion_stacks_end_in_system_calls(tmp_path):
    """A perf whose `data convert --to-ctf` is not compiled in, as Debian unstable's (the
    same message and exit status): pyust converts perf script's output itself."""
    skip_unless_perf_records()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    perf = bin_dir / "perf"
    perf.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = data ] && [ "$2" = convert ]; then
            echo "The babeltrace2 ctf support is not compiled in." >&2
            exit 255
        fi
        exec {shutil.which("perf")} "$@"
        """))
    perf.chmod(0o755)
    env = child_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result, trace, pid = traced(tmp_path, "--kernel", env=env)
    lines = [line for line in result.stderr.splitlines() if "kernel events" in line]
    assert len(lines) == 1 and "through perf script" in lines[0], result.stderr
    stacks = folded(report(trace, pid, "folded"))
    assert WRITER + ";write" in stacks, sorted(stacks)
    assert any(stack.startswith(SLEEPER + ";") and stack.endswith(";[off-cpu]")
               for stack in stacks), sorted(stacks)


SPINNER = """\
    import os, sys

    def spin():
        # One C call, no Python event inside: only the kernel's switches show its time off the
        # CPU, which the busy process beside it on the same CPU takes about half of.
        return sum(range(40_000_000))

    spin()
    with open(sys.argv[1], "w") as pid_file:
        pid_file.write(str(os.getpid()))
"""


@pytest.mark.parametrize("namespace", [False, True], ids=["host", "pid-namespace"])
def test_off_cpu_ends_when_the_thread_runs_again(tmp_path, namespace):
    """Preempted in a long C call, the thread is switched back in by another task: the
    system-wide sched_switch recording ends each [off-cpu] there, so the call shows many
    short ones. (Recorded per task only, the first would last until spin's return.)
    In a PID namespace of its own (a container), sched_switch's payload numbers threads as
    the host does and everything else as the namespace does: the switch back in still ends
    the [off-cpu]."""
    skip_unless_perf_records()
    # In a new PID namespace (with its own /proc, for perf): the program and perf see the
    # namespace's pids; the session daemon is the host's.
    wrapper = ["unshare", "--pid", "--fork", "--mount-proc"] if namespace else []
    if namespace and subprocess.run(wrapper + ["true"], capture_output=True).returncode != 0:
        pytest.skip("cannot make a PID namespace here (unshare --pid --fork --mount-proc)")
    program = tmp_path / "spin.py"
    program.write_text(textwrap.dedent(SPINNER))
    pid_file = tmp_path / "pid"
    trace = tmp_path / "trace"
    busy = subprocess.Popen(["taskset", "-c", "0", PYTHON, "-c", "while True: pass"])
    try:
        result = subprocess.run(wrapper + ["taskset", "-c", "0", PYTHON, "-m", "pyust", "run",
                                           "--kernel", "-o", str(trace), "--", str(program),
                                           str(pid_file)],
                                capture_output=True, text=True, timeout=300, env=child_env())
    finally:
        busy.kill()
        busy.wait()
    assert result.returncode == 0, result.stderr
    assert "sched_switch: " in result.stderr and "no system-wide" not in result.stderr, \
        result.stderr
    pid = int(pid_file.read_text())
    events = json.loads(report(trace, pid, "chrome"))["traceEvents"]
    frames = [e for e in events if e.get("ph") == "X" and e["pid"] == pid]
    (spin,) = [e for e in frames if e["name"] == "__main__:spin"]
    off_cpu = [e for e in frames if e["name"] == "[off-cpu]" and e["tid"] == spin["tid"]
               and spin["ts"] <= e["ts"] <= spin["ts"] + spin["dur"]]
    assert len(off_cpu) >= 2, off_cpu
    # About half of spin's time; recorded per task, nearly all of it after the first switch.
    assert sum(e["dur"] for e in off_cpu) < 0.9 * spin["dur"], (off_cpu, spin)
    # Without --pid: no thread of the busy process (or of any other task it switched with).
    everything = run_pyust(["report", str(trace), "--format", "chrome"])
    assert everything.returncode == 0, everything.stderr
    spans = [e for e in json.loads(everything.stdout)["traceEvents"] if e.get("ph") == "X"]
    assert {e["pid"] for e in spans} == {pid}


def user_space_complete(trace: Path, pid: int) -> None:
    stacks = folded(report(trace, pid, "folded"))
    assert WRITER in stacks and SLEEPER in stacks, sorted(stacks)
    assert not any(stack.endswith((";write", ";[off-cpu]")) for stack in stacks), sorted(stacks)


STATTER = """\
    import os, sys, time

    def flood():
        for i in range(200_000):
            os.stat("/")

    def after_the_flood():
        # One stat at a time after a sleep: perf, woken by the flood, has written its buffer out
        # meanwhile, and these 20 events fit in half of it, whatever the flood lost.
        for i in range(5):
            time.sleep(0.05)
            os.stat("/")

    flood()
    after_the_flood()
    with open(sys.argv[2], "w") as pid_file:
        pid_file.write(str(os.getpid()))
"""
AFTER_THE_FLOOD = "__main__:<module>;__main__:after_the_flood"


def is_kernel_frame(frame: str) -> bool:
    """A folded frame of the kernel: a system call or [off-cpu] (Python, C and native frames
    are module:name, the frames of unknown code <...>)."""
    return ":" not in frame and not frame.startswith("<")


def test_events_perf_lost_are_counted_and_said(tmp_path):
    """200,000 stat(2) into a one-page ring buffer: perf drops events, and the run says how
    many and how to avoid it. The trace it kept is still read: the stats made after the flood,
    once perf wrote its buffer out, are on their Python stack, and a system call whose exit perf
    lost ends at the thread's next Python event: no stack has one under a Python frame."""
    skip_unless_perf_records()
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(STATTER))
    result = run_pyust(["run", "--kernel", "-o", str(tmp_path / "trace"), "--", str(program),
                        "-", str(tmp_path / "pid")], env=child_env(PYUST_PERF_BUFFER="4K"))
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "perf lost" in line]
    assert len(warnings) == 1, result.stderr
    lost = int(re.search(r"perf lost (\d+) system-call events", warnings[0]).group(1))
    recorded = int(re.search(r"system calls: (\d+) in", result.stderr).group(1))
    # Each stat is two events (entry, exit): what was kept and what was lost cover them.
    assert lost > 0 and lost + recorded >= 400_000, result.stderr
    assert "PYUST_PERF_BUFFER sets its size per CPU (4K in this run)" in warnings[0]
    stacks = folded(report(tmp_path / "trace", int((tmp_path / "pid").read_text()), "folded"))
    assert AFTER_THE_FLOOD + ";newfstatat" in stacks, sorted(stacks)
    # perf loses events from the interpreter's start on (it fills a page): a system call whose
    # exit was lost there stood under <module>, and every stack of the run on it.
    misplaced = [stack for stack in stacks
                 if any(is_kernel_frame(outer) and not is_kernel_frame(inner)
                        for outer, inner in zip(stack.split(";"), stack.split(";")[1:]))]
    assert not misplaced, misplaced


def test_a_perf_buffer_that_is_no_size_is_one_line(tmp_path):
    skip_unless_perf_records()
    result, trace, pid = traced(tmp_path, "--kernel",
                                env=child_env(PYUST_PERF_BUFFER="lots"))
    lines = [line for line in result.stderr.splitlines() if "kernel events" in line]
    assert lines == ["pyust: no kernel events: PYUST_PERF_BUFFER='lots' is not a size (a "
                     "number of pages, or of bytes with B, K, M or G: 8M); tracing user space "
                     "only"], result.stderr
    user_space_complete(trace, pid)


def test_without_perf_one_line_and_user_space(tmp_path):
    if os.path.exists("/proc/lttng"):
        pytest.skip("lttng-modules is loaded: perf is not needed here")
    # A PATH with the tools pyust runs, and no perf (Debian puts it beside them in /usr/bin).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("lttng", "lttng-sessiond", "babeltrace2", "mount", "sh"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    path = [str(bin_dir)]
    env = child_env(PATH=os.pathsep.join(path))
    result, trace, pid = traced(tmp_path, "--kernel", env=env)
    lines = [line for line in result.stderr.splitlines() if "kernel events" in line]
    assert len(lines) == 1 and lines[0].startswith("pyust: no kernel events:"), result.stderr
    assert "perf is not installed" in lines[0], lines
    assert not (trace / "kernel-perf").exists()
    user_space_complete(trace, pid)


def test_not_root_one_line_and_user_space(tmp_path):
    """As user nobody (setpriv), with a session daemon of its own."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to become another user")
    if os.path.exists("/proc/lttng"):
        pytest.skip("lttng-modules is loaded: a non-root user's session has no kernel domain")
    for path in (PYTHON, PYUST_PATH):
        if not os.access(path, os.R_OK) or any(
                not os.stat(parent).st_mode & 0o001 for parent in Path(path).resolve().parents):
            pytest.skip(f"{path} is not readable by other users")
    # pytest's temporary directories are private to root: nobody gets one of its own.
    top = Path(tempfile.mkdtemp(prefix="pyust-kernel-nobody-"))
    home = top / "home"
    home.mkdir()
    work = top / "work"
    work.mkdir()
    for directory in (top, home, work):
        os.chown(directory, 65534, 65534)
    top.chmod(0o755)
    env = child_env(LTTNG_HOME=str(home), HOME=str(home))
    user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    try:
        result, trace, pid = traced(work, "--kernel", env=env, user_argv=user)
        lines = [line for line in result.stderr.splitlines() if "kernel events" in line]
        assert len(lines) == 1 and "needs root" in lines[0], result.stderr
        user_space_complete(trace, pid)
    finally:
        pid_file = home / ".lttng" / "lttng-sessiond.pid"
        if pid_file.exists():  # the session daemon pyust run started for nobody
            subprocess.run(["kill", pid_file.read_text().strip()], check=False)
        shutil.rmtree(top, ignore_errors=True)
