"""Kernel events for `pyust run --kernel`: the traced program's system calls and
its scheduling (sched_switch), on the same timeline as its python:* events.

Two recorders, chosen in this order:

  LTTng's kernel tracer (lttng-modules loaded, /proc/lttng exists, root): a
  kernel channel in pyust's own session, with every system call
  (`enable-event -k --syscall -a`) and sched_switch, the vpid/vtid/procname
  contexts, and the process ID tracker set to the traced program only.
  LTTng writes it under TRACE/kernel, with the session's clock.

  perf (when the kernel tracer is absent, as in most containers and on kernels
  without the modules): `perf record -k mono` on raw_syscalls:sys_enter/sys_exit
  for the traced process, its threads and the processes it forks, and a second
  `perf record -a` on sched:sched_switch, filtered on the program's command
  name (a switch to a thread is recorded in the context of the task it
  replaces, which a per-process recording misses: without it, time off the CPU
  would last until the thread's next event). Both are converted at the end
  into TRACE/kernel-perf and TRACE/kernel-perf-sched: with `perf data convert
  --to-ctf` where this perf has it, else (perf built without libbabeltrace, as
  Debian unstable's) with pyust's writer of the same CTF from `perf script`
  (perf_ctf.py). `-k mono` stamps events with CLOCK_MONOTONIC, the clock
  LTTng-UST reads; perf's CTF clock has no offset (origin: boot), so its offset
  is set to the one LTTng wrote for the user-space trace: both then map the
  same clock value to the same time, and babeltrace2 merges them on one
  timeline (doc/kernel-and-native.md, "Clock alignment").

When neither can run (no modules and no perf, or not root), run() prints one
line and the program is traced in user space only.

The traced program must not run before the kernel recorder listens: the child
is started behind a gate (a stub that waits on a pipe, then execs the real
command), attached to, then released.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import ctf, lttng, perf_ctf

KERNEL_CHANNEL = "pyust-kernel"
PERF_DIR = "kernel-perf"
PERF_SCHED_DIR = "kernel-perf-sched"
PERF_SYSCALLS = "raw_syscalls:sys_enter,raw_syscalls:sys_exit"
PERF_SCHED = "sched:sched_switch"
# The system-call recording's ring buffer (per CPU): perf's default (512 KiB) overflows
# within milliseconds of a tight system-call loop when perf is slow to write out, as on
# a machine busy with disk I/O; 4 MiB holds about 50,000 events. PYUST_PERF_BUFFER sets
# it (perf record's -m: pages, or a size with B/K/M/G, a power of two pages).
PERF_SYSCALL_BUFFER = "4M"
# A command name perf's filter can quote as is (the kernel's comm: at most 15 bytes).
_COMM_RE = re.compile(r"[A-Za-z0-9._+-]{1,15}\Z")
TRACEFS = "/sys/kernel/tracing"
# How long perf may take to open its events (it reads every tracepoint's format first).
PERF_READY_TIMEOUT = 30.0

# The gate: waits until the parent writes a byte on fd argv[1], then becomes the program.
_GATE = ("import os, sys\n"
         "fd = int(sys.argv[1])\n"
         "go = os.read(fd, 1)\n"
         "os.close(fd)\n"
         "if go != b'1': sys.exit(125)\n"
         "os.execvp(sys.argv[2], sys.argv[2:])\n")


class KernelUnavailable(Exception):
    """Kernel events cannot be recorded here; the message says why and what to do."""


def _is_root() -> bool:
    return os.geteuid() == 0


def lttng_kernel_available() -> bool:
    """Whether LTTng's kernel tracer can record: lttng-modules loaded (it
    creates /proc/lttng) and this process is root."""
    return _is_root() and os.path.exists("/proc/lttng")


def perf_unavailable_reason() -> str | None:
    """None when perf can record the kernel's tracepoints here, else why not
    (with the fix)."""
    if shutil.which("perf") is None:
        return "perf is not installed (apt-get install linux-perf)"
    if not _is_root():
        return "recording system calls with perf needs root (run pyust run --kernel as root)"
    if not os.path.isdir(os.path.join(TRACEFS, "events", "raw_syscalls")):
        try:
            subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True,
                           timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if not os.path.isdir(os.path.join(TRACEFS, "events", "raw_syscalls")):
            return (f"the kernel's tracepoints are not visible in {TRACEFS} "
                    f"(mount -t tracefs nodev {TRACEFS})")
    return None


class Recorder:
    """Records the kernel events of one traced program. choose() makes one;
    then prepare() before the session starts, spawn() the program, stop() after
    it ended, finish() once the session is destroyed."""

    kind = "none"

    def prepare(self, session: lttng.Session) -> None:
        """Sets up what must exist before the session starts."""

    def spawn(self, command: list, env: dict) -> subprocess.Popen:
        return subprocess.Popen(command, env=env)

    def follow(self, pid: int) -> None:
        """Records process pid, already running (pyust attach), from now on (instead
        of spawn())."""

    def stop(self) -> None:
        """The program has ended (or was detached from): stop recording."""

    def finish(self, trace: str) -> str | None:
        """The session is destroyed and its trace written: the one-line summary
        of the kernel events, or None."""
        return None


class LttngKernelRecorder(Recorder):
    """LTTng's kernel tracer, in the user-space session."""

    kind = "lttng"

    def __init__(self):
        self.session = None

    def prepare(self, session: lttng.Session) -> None:
        self.session = session
        session.enable_kernel(KERNEL_CHANNEL, ["vpid", "vtid", "procname"])

    def spawn(self, command: list, env: dict) -> subprocess.Popen:
        return _spawn_gated(command, env, self.session.track_kernel_pid)

    def follow(self, pid: int) -> None:
        self.session.track_kernel_pid(pid)

    def finish(self, trace: str) -> str | None:
        return f"pyust: kernel events (LTTng kernel tracer) in {os.path.join(trace, 'kernel')}"


class _Perf:
    """One `perf record` of the recorder: its process, control pipe, data and log."""

    def __init__(self, workdir: str, name: str, target: str):
        self.data = os.path.join(workdir, f"{name}.data")
        self.log = os.path.join(workdir, f"{name}.log")
        self.target = target  # the CTF directory under the trace
        self.process = None
        self.control = None

    def start(self, options: list) -> None:
        """Starts perf with its events disabled, enables them through perf's control
        descriptors and waits for perf's acknowledgement. Raises KernelUnavailable."""
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        # -D -1: events start disabled.
        command = ["perf", "record", "--quiet", "-k", "mono", *options, "-o", self.data,
                   "-D", "-1", f"--control=fd:{ctl_r},{ack_w}"]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=log, pass_fds=(ctl_r, ack_w),
                                            start_new_session=True)
        os.close(ctl_r)
        os.close(ack_w)
        # The control pipe stays open while perf runs: perf takes its end for a command.
        self.control = ctl_w
        try:
            os.write(ctl_w, b"enable\n")
            ack = _read_with_timeout(ack_r, PERF_READY_TIMEOUT)
        finally:
            os.close(ack_r)
        if not ack.startswith(b"ack"):
            self.kill()
            raise KernelUnavailable(f"perf record did not start: {self.log_line()}")

    def lost(self) -> int | None:
        """How many events perf could not record (its ring buffer was full), from the
        per-event counts of `perf report --stats` (read from the data file's records, not
        its events: fast); None when this perf does not say."""
        result = subprocess.run(["perf", "report", "--stats", "-i", self.data],
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            return None
        # Per event: "raw_syscalls:sys_enter stats:" then "LOST_SAMPLES events: N"; the
        # aggregated section above them counts records (a record may stand for many).
        per_event = result.stdout.split(" stats:", 1)
        if len(per_event) < 2:
            return None
        return sum(int(n) for n in re.findall(r"LOST_SAMPLES events:\s+(\d+)", per_event[1]))

    def log_line(self) -> str:
        try:
            with open(self.log, errors="replace") as log:
                lines = [line.strip() for line in log if line.strip()]
        except OSError:
            lines = []
        return lines[-1] if lines else "no message"

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._close()

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close()

    def _close(self) -> None:
        if self.control is not None:
            os.close(self.control)
            self.control = None

    def convert(self, trace: str, offset: int) -> tuple:
        """Converts the data into trace/target with the clock at offset: (directory,
        events or None, converter), or raises KernelUnavailable with the reason.
        perf's own conversion first; where this perf has none (built without
        libbabeltrace, as Debian unstable's), pyust's writer from `perf script`."""
        target = os.path.join(trace, self.target)
        choice = os.environ.get("PYUST_PERF_CONVERT", "")
        if choice not in ("", "perf", "pyust"):
            raise KernelUnavailable(f"PYUST_PERF_CONVERT={choice!r} is neither perf nor pyust")
        failure = None
        if choice != "pyust":
            result = subprocess.run(["perf", "data", "convert", "--to-ctf", target,
                                     "-i", self.data, "--force"],
                                    capture_output=True, text=True, timeout=600)
            if result.returncode == 0 and os.path.isfile(os.path.join(target, "metadata")):
                align_perf_clock(os.path.join(target, "metadata"), offset)
                samples = re.search(r"\((\d+) samples\)", result.stdout + result.stderr)
                return target, int(samples.group(1)) if samples else None, "perf data convert"
            lines = (result.stderr or result.stdout).strip().splitlines()
            failure = str(lines[-1] if lines else result.returncode)
            if choice == "perf":
                raise KernelUnavailable(failure)
            shutil.rmtree(target, ignore_errors=True)
        try:
            count = perf_ctf.convert(self.data, target)
        except (perf_ctf.ConversionError, OSError) as error:
            shutil.rmtree(target, ignore_errors=True)
            raise KernelUnavailable(f"perf script failed: {error}"
                                    + (f" (perf data convert: {failure})" if failure else ""))
        align_perf_clock(os.path.join(target, "metadata"), offset)
        return target, count, "perf script"


class PerfRecorder(Recorder):
    """perf record -k mono on the traced process (system calls) and on every CPU
    (sched_switch of its command name), converted to CTF at the end."""

    kind = "perf"

    def __init__(self):
        self.workdir = tempfile.mkdtemp(prefix="pyust-perf-")
        self.syscalls = _Perf(self.workdir, "syscalls", PERF_DIR)
        self.sched = _Perf(self.workdir, "sched", PERF_SCHED_DIR)
        self.started = []

    def spawn(self, command: list, env: dict) -> subprocess.Popen:
        return _spawn_gated(command, env, self.follow)

    def follow(self, pid: int) -> None:
        """Starts both perfs on pid (for spawn(): still in the gate, with the command name of
        the program it becomes, both being sys.executable). When the system-wide one cannot
        run, the per-process one records sched_switch too (the switches away only)."""
        try:
            with open(f"/proc/{pid}/comm") as file:
                comm = file.read().strip()
        except OSError:
            comm = ""
        sched_note = None
        if _COMM_RE.match(comm):
            try:
                self.sched.start(["-a", "-e", PERF_SCHED, "--filter",
                                  f'prev_comm == "{comm}" || next_comm == "{comm}"'])
                self.started.append(self.sched)
            except KernelUnavailable as error:
                sched_note = str(error)
        else:
            sched_note = f"its command name {comm!r} cannot go in a perf filter"
        events = PERF_SYSCALLS if self.started else f"{PERF_SYSCALLS},{PERF_SCHED}"
        # -p follows the threads the process creates and the processes it forks (inherit is
        # perf's default with -p).
        try:
            self.syscalls.start(["-e", events, "-p", str(pid), "-m", _syscall_buffer()])
        except KernelUnavailable:
            self.sched.kill()
            self.started.clear()
            raise
        self.started.append(self.syscalls)
        if sched_note:
            print("pyust: warning: no system-wide sched_switch recording "
                  f"({sched_note}): time off the CPU lasts until each thread's next event",
                  file=sys.stderr)

    def stop(self) -> None:
        for perf in self.started:
            perf.stop()

    def finish(self, trace: str) -> str | None:
        try:
            if not self.started or not os.path.exists(self.syscalls.data):
                return None
            offset, source = lttng_clock_offset(trace)
            parts, losses = [], []
            converters = set()
            for perf, what in ((self.syscalls, "system calls"), (self.sched, "sched_switch")):
                if perf not in self.started or not os.path.exists(perf.data):
                    continue
                lost = perf.lost()
                if lost:
                    losses.append(f"{lost} {'system-call' if perf is self.syscalls else what} "
                                  "events")
                try:
                    target, count, converter = perf.convert(trace, offset)
                except KernelUnavailable as error:
                    if perf is self.syscalls:
                        return ("pyust: warning: converting perf's recording failed, the trace "
                                f"has no kernel events: {error}")
                    parts.append(f"no {what} (converting perf's recording failed: {error})")
                    continue
                converters.add(converter)
                parts.append(f"{what}: {'' if count is None else f'{count} '}in {target}")
            through = f" through {' and '.join(sorted(converters))}" if converters else ""
            note = (f"pyust: kernel events (perf{through}): {'; '.join(parts)}, clock aligned "
                    f"to {source}")
            if losses:
                note += (f"\npyust: warning: perf lost {' and '.join(losses)} (its ring buffer "
                         "was full: perf wrote out too slowly, as on a machine busy with disk "
                         "I/O); the stacks miss those system calls and switches. A larger buffer "
                         f"helps: PYUST_PERF_BUFFER sets its size per CPU ({_syscall_buffer()} "
                         "in this run)")
            return note
        finally:
            keep = os.environ.get("PYUST_PERF_KEEP")
            if keep:
                # For comparing the conversions on one recording (tests/kernel).
                os.makedirs(keep, exist_ok=True)
                for perf in (self.syscalls, self.sched):
                    if os.path.exists(perf.data):
                        shutil.copy(perf.data, keep)
            shutil.rmtree(self.workdir, ignore_errors=True)


def _syscall_buffer() -> str:
    """perf record's -m for the system calls: PYUST_PERF_BUFFER, or the default. Raises
    KernelUnavailable when it is not a size."""
    size = os.environ.get("PYUST_PERF_BUFFER") or PERF_SYSCALL_BUFFER
    if not re.fullmatch(r"[1-9][0-9]*[BKMG]?", size):
        raise KernelUnavailable(f"PYUST_PERF_BUFFER={size!r} is not a size (a number of pages, "
                                "or of bytes with B, K, M or G: 8M)")
    return size


def choose() -> Recorder:
    """The best recorder here, or the plain Recorder (user space only) after
    printing one line that says why."""
    if lttng_kernel_available():
        return LttngKernelRecorder()
    reason = perf_unavailable_reason()
    if reason is None:
        return PerfRecorder()
    print(f"pyust: no kernel events: LTTng's kernel tracer is not loaded and {reason}; "
          "tracing user space only", file=sys.stderr)
    return Recorder()


def _read_with_timeout(fd: int, timeout: float) -> bytes:
    import select

    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b""
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            return os.read(fd, 64)


def _spawn_gated(command: list, env: dict, attach) -> subprocess.Popen:
    """Starts command behind the gate, calls attach(pid), then lets it run.
    When attach raises KernelUnavailable, says so on one line and lets the
    program run anyway (user space only); any other exception kills it."""
    gate_r, gate_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", _GATE, str(gate_r), *command], env=env,
                             pass_fds=(gate_r,))
    os.close(gate_r)
    try:
        try:
            attach(child.pid)
        except (KernelUnavailable, lttng.LttngError) as error:
            print(f"pyust: no kernel events: {error}; tracing user space only",
                  file=sys.stderr)
        os.write(gate_w, b"1")
    except BaseException:
        child.kill()
        child.wait()
        raise
    finally:
        os.close(gate_w)
    return child


# ------------------------------------------------------------ clock alignment

_CLOCK_BLOCK = re.compile(rb"clock\s*\{[^}]*\}", re.S)


def lttng_clock_offset(trace: str) -> tuple:
    """(offset, source): the offset in ns from the Unix epoch that LTTng gave
    its monotonic clock in the user-space metadata of trace (CTF 1.8 or 2), or,
    without such a trace, CLOCK_REALTIME - CLOCK_MONOTONIC measured now."""
    for directory, subdirs, files in os.walk(trace):
        subdirs.sort()
        if "metadata" not in files or os.path.basename(directory) in (PERF_DIR, PERF_SCHED_DIR):
            continue
        try:
            clocks = ctf.read_metadata(os.path.join(directory, "metadata")).clocks()
        except (ctf.CtfError, ValueError):  # unreadable, or damaged JSON: try the next one
            continue
        monotonic = next((clock for clock in clocks if clock.name == "monotonic"), None)
        if monotonic is None:
            continue
        return monotonic.offset_ns(), f"LTTng's ({os.path.relpath(directory, trace)})"
    best = None
    for _ in range(5):  # the pair read closest together
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or after - before < best[0]:
            best = (after - before, real - (before + after) // 2)
    return best[1], "CLOCK_REALTIME - CLOCK_MONOTONIC (no LTTng metadata)"


def align_perf_clock(metadata: str, offset: int) -> None:
    """Rewrites the clock of perf's CTF metadata (origin: CLOCK_MONOTONIC's,
    offset 0) to start at offset ns from the Unix epoch, absolute, as LTTng's
    monotonic clock is."""
    with open(metadata, "rb") as file:
        text = file.read()
    block = _CLOCK_BLOCK.search(text)
    if not block:
        raise KernelUnavailable(f"no clock in perf's CTF metadata {metadata}")
    clock = block.group(0)
    clock = re.sub(rb"\boffset_s\s*=\s*-?\d+\s*;", b"offset_s = %d;" % (offset // 10**9), clock)
    clock = re.sub(rb"\boffset\s*=\s*-?\d+\s*;", b"offset = %d;" % (offset % 10**9), clock)
    if re.search(rb"\babsolute\s*=", clock):
        clock = re.sub(rb"\babsolute\s*=\s*\w+\s*;", b"absolute = TRUE;", clock)
    else:
        clock = clock[:-1] + b"\tabsolute = TRUE;\n}"
    if b"offset_s" not in clock:
        clock = clock[:-1] + b"\toffset_s = %d;\n}" % (offset // 10**9)
    with open(metadata, "wb") as file:
        file.write(text[:block.start()] + clock + text[block.end():])
