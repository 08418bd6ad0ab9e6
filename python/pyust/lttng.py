"""A tracing session driven through liblttng-ctl (pyust.lttng_ctl) where it can and the
`lttng` command otherwise: the session that `pyust run` creates, records into, and destroys.

Every failure raises LttngError with one line a user can act on.
"""

from __future__ import annotations

import glob
import os
import shutil
import struct
import subprocess
import time

from . import lttng_ctl
from .lttng_ctl import LttngError  # noqa: F401 (pyust.lttng.LttngError, as the callers know it)

_MI_NS = "{https://lttng.org/xml/ns/lttng-mi}"

CHANNEL = "pyust"
# The contexts of every python:* event: whose thread it is. Not procname: each event would
# copy the command name (16 bytes, and 147 instructions of LTTng-UST's per event on 3.11,
# about 10% of a standard-mode event), while python:process carries the command line once
# per process and python:thread each thread's name. (The kernel channel keeps procname.)
CONTEXTS = ("vpid", "vtid")
# `run --native`: native frames and the events that map addresses to binaries
# go to a channel of their own, with the ip context debug-info needs. The
# python:* events keep their channel: no ip on every Python event, and a flood
# of native events that fills its buffers costs no Python event.
NATIVE_CHANNEL = "pyust-native"
# Flight recorder and rotated files: the python:* events that name what the others
# refer to by id keep a channel of their own, which never overwrites or deletes them (with
# python:lost_start, which says what start of a process the trace lacks).
NAMES_CHANNEL = "pyust-names"
NAMING_EVENTS = ("python:code", "python:thread", "python:process", "python:lost_start")


class ChannelConfig:
    """The user-space channel pyust records python:* into. (A plain class:
    dataclasses would import inspect, 10 ms of every pyust run.)

    blocking: block the traced program instead of discarding events when the
    buffers are full (LTTng's --blocking-timeout; the program must allow it).
    overwrite: flight recorder, full buffers overwrite their oldest sub-buffer.
    tracefile_size, tracefile_count: rotate each stream's file at this size,
    keeping at most this many files."""

    def __init__(self, subbuf_size: str = "1M", num_subbuf: int = 8, blocking: bool = False,
                 overwrite: bool = False, tracefile_size: str | None = None,
                 tracefile_count: int | None = None):
        self.subbuf_size = subbuf_size
        self.num_subbuf = num_subbuf
        self.blocking = blocking
        self.overwrite = overwrite
        self.tracefile_size = tracefile_size
        self.tracefile_count = tracefile_count


def _lttng_path() -> str:
    path = shutil.which("lttng")
    if path is None:
        raise LttngError("lttng is not installed: apt-get install lttng-tools")
    return path


def _run(args: list, *, mi: bool = False, timeout: float = 60) -> subprocess.CompletedProcess:
    command = [_lttng_path()] + (["--mi", "xml"] if mi else []) + args
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LttngError(f"`lttng {' '.join(args)}` did not answer in {timeout:.0f} s; "
                         "is the session daemon stopped (kill -CONT it) or overloaded?") from None


def _error_line(result: subprocess.CompletedProcess) -> str:
    for stream in (result.stderr, result.stdout):
        for line in stream.splitlines():
            line = line.strip()
            if line.startswith("Error:"):
                return line[len("Error:"):].strip()
    text = (result.stderr or result.stdout).strip().splitlines()
    return text[-1] if text else f"exit status {result.returncode}"


def _check(result: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if result.returncode != 0:
        raise LttngError(f"{what}: {_error_line(result)}")
    return result


# The switch timer of pyust run's metadata channel, in microseconds (Session.set_metadata_timer).
METADATA_SWITCH_US = 10000

def discarded_text(discarded: int | None) -> str:
    """The summaries' words for what LTTng discarded (None: LTTng could not say, a live
    session whose relay daemon was cut off)."""
    if discarded is None:
        return "discarded events unknown (the relay daemon was lost)"
    return f"{discarded} discarded by LTTng"


# pyust run --trace-format's values, as `lttng create --trace-format` takes them.
TRACE_FORMATS = tuple(lttng_ctl.TRACE_FORMAT_CODES)


def knows_trace_formats() -> bool:
    """Whether this LTTng can be told which CTF version to write (LTTng 2.15 and later,
    which write CTF 2 unless told CTF 1.8): the schema of its session configurations,
    installed beside the `lttng` command, has the trace_format element."""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(_lttng_path())))
    try:
        with open(os.path.join(prefix, "share", "xml", "lttng", "session.xsd"), "rb") as file:
            return b'"trace_format"' in file.read()
    except OSError:
        return False


def sessiond_is_running() -> bool:
    """True when a session daemon answers this user: asked of liblttng-ctl
    (lttng_session_daemon_alive), else of `lttng --mi xml list`'s status (LTTng
    words the failure without a daemon differently from version to version)."""
    alive = lttng_ctl.daemon_alive()
    if alive is not None:
        return alive
    return _run(["list"], mi=True).returncode == 0


def session_output(name: str) -> str | None:
    """The output path of this user's session `name` ("" for one without a local
    path), or None when there is no such session (asked through `lttng --mi xml`)."""
    import xml.etree.ElementTree as ElementTree

    result = _run(["list", name], mi=True)
    if result.returncode != 0:
        return None
    try:
        root = ElementTree.fromstring(result.stdout)
    except ElementTree.ParseError:
        return None
    for session in root.iter(_MI_NS + "session"):
        if session.findtext(_MI_NS + "name") == name:
            return session.findtext(_MI_NS + "path") or ""
    return None


def default_output(directory_name: str) -> str:
    """Where `lttng create` writes a session's trace when told no output, in directory
    directory_name (lttng's is NAME-DATE-TIME): under $LTTNG_HOME, else the home directory,
    as lttng finds them."""
    home = os.environ.get("LTTNG_HOME") or os.path.expanduser("~")
    return os.path.join(home, "lttng-traces", directory_name)


def destroy_session(name: str) -> None:
    """Destroys session `name` if it exists; a failure is not raised (clean-up)."""
    _run(["destroy", name])


def start_sessiond() -> None:
    """Start a session daemon for this user, as `lttng create` would."""
    sessiond = shutil.which("lttng-sessiond")
    if sessiond is None:
        raise LttngError("lttng-sessiond is not installed: apt-get install lttng-tools")
    result = subprocess.run([sessiond, "--daemonize"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0 or not sessiond_is_running():
        raise LttngError(f"cannot start a session daemon: {_error_line(result)}")


class Session:
    """One LTTng session. Use create(); always destroy() (the trace stays)."""

    def __init__(self, name: str, path: str):
        self.name = name
        self.path = path

    @classmethod
    def create(cls, name: str, output: str | None, live_url: str | None = None,
               live_timer_us: int | None = None, *, shm_path: str | None = None,
               snapshot: bool = False, trace_format: str | None = None) -> "Session":
        """A new session writing to output (a directory), or, with live_url, a live session
        streaming to the relay daemon at that URL (net://HOST[:CTRL[:DATA]]), flushed every
        live_timer_us (lttng's default when None). shm_path: the ring buffers are files
        there (lttng-crash reads them after a crash); snapshot: a snapshot session, written
        only by snapshot_record(). trace_format: a key of TRACE_FORMATS (None: lttng's
        default)."""
        args = ["create", name] + (["--output", output] if output else [])
        args += ["--trace-format", trace_format] if trace_format else []
        args += ["--shm-path", shm_path] if shm_path else []
        args += ["--snapshot"] if snapshot else []
        if live_url:
            timer = f"={live_timer_us}" if live_timer_us else ""
            args += [f"--live{timer}", f"--set-url={live_url}"]
        result = _check(_run(args, mi=True), f"cannot create session {name!r}")
        path = _mi_text(result.stdout, "path")
        return cls(name, path or output or "")

    @classmethod
    def create_started(cls, name: str, output: str, config: ChannelConfig,
                       trace_format: str | None = None, *, user: int | None = None):
        """A new session writing to output, its channel pyust recording python:* with
        the contexts, started, all through liblttng-ctl (pyust.lttng_ctl): the five
        `lttng` commands it saves (create, enable-channel, enable-event, add-context,
        track) cost 25 ms. trace_format: a key of TRACE_FORMATS (None: the session
        daemon's default, as `lttng create`). user: record the user-space events of this
        user's processes only (as track_user()). None when the library cannot, or config
        asks for what this does not set (then create() and the rest, whose messages name
        the option a user got wrong)."""
        subbuf_size = _size_bytes(config.subbuf_size)
        if (subbuf_size is None or subbuf_size < os.sysconf("SC_PAGE_SIZE")
                or not _power_of_two(subbuf_size) or not _power_of_two(config.num_subbuf)
                or config.blocking or config.overwrite or config.tracefile_size
                or config.tracefile_count or not lttng_ctl.can_set_up_sessions()):
            return None
        lttng_ctl.create_session(name, output, trace_format)
        session = cls(name, output)
        try:
            session.set_metadata_timer()
            if user is not None:
                lttng_ctl.track_user(name, user)
            lttng_ctl.set_up_channel(name, CHANNEL, subbuf_size, config.num_subbuf,
                                     "python:*", CONTEXTS)
            session.start()
        except BaseException:
            session.destroy()
            raise
        return session

    def _enable_channel(self, channel: str, config: ChannelConfig) -> None:
        args = ["enable-channel", "--userspace", "--session", self.name,
                "--subbuf-size", str(config.subbuf_size), "--num-subbuf", str(config.num_subbuf)]
        if config.blocking:
            args += ["--blocking-timeout", "inf"]
        # Explicit: a snapshot session's channels overwrite unless told otherwise.
        args += ["--overwrite"] if config.overwrite else ["--discard"]
        if config.tracefile_size:
            args += ["--tracefile-size", str(config.tracefile_size)]
        if config.tracefile_count:
            args += ["--tracefile-count", str(config.tracefile_count)]
        _check(_run(args + [channel]), f"cannot create the {channel} channel")

    def set_metadata_timer(self) -> None:
        """Have the consumer daemon ask for new metadata every METADATA_SWITCH_US, before
        the session starts. Without it, the metadata of a program's event classes first
        reaches the consumer when the program exits, and LTTng 2.13.9's consumer (before
        2.13.11) may then poll 200 ms for it, holding up the next `lttng stop`; with it, that
        wait starts while a program runs if it lives longer than the timer's period
        after it registered (a shorter one still meets it: doc/performance.md). A
        performance measure only: an LTTng that refuses it records all the same (LTTng
        2.16 refuses the channel name metadata, to liblttng-ctl as to the command)."""
        if not lttng_ctl.enable_metadata_channel(self.name, METADATA_SWITCH_US):
            _run(["enable-channel", "--userspace", "--session", self.name,
                  "--switch-timer", str(METADATA_SWITCH_US), "metadata"])

    def enable_python(self, config: ChannelConfig) -> None:
        """python:* into the channel pyust. When that channel forgets its oldest events
        (overwrite, or a tracefile count), the events that name code, threads and
        processes go to a channel of their own that keeps them, NAMES_CHANNEL: the
        stacks of a flight recording start part-way, but their functions keep names."""
        contexts = []
        for context in CONTEXTS:
            contexts += ["--type", context]
        channels = [(CHANNEL, config, "python:*")]
        if config.overwrite or config.tracefile_count:
            # Recorded in both channels: a registration twice is what a rundown does.
            # (Not `--exclude`: with exclusions, lttng-sessiond 2.13.9 faults here.)
            channels.append((NAMES_CHANNEL, ChannelConfig(), ",".join(NAMING_EVENTS)))
        for channel, channel_config, events in channels:
            self._enable_channel(channel, channel_config)
            _check(_run(["enable-event", "--userspace", "--session", self.name,
                         "--channel", channel, events]), "cannot enable the python events")
            _check(_run(["add-context", "--userspace", "--session", self.name,
                         "--channel", channel] + contexts), "cannot add the contexts")

    def enable_native(self, config: ChannelConfig, events: tuple, contexts: tuple) -> None:
        """A second channel for native frames: `events` with `contexts` (pyust.native's
        EVENTS and CONTEXTS)."""
        self._enable_channel(NATIVE_CHANNEL, config)
        _check(_run(["enable-event", "--userspace", "--session", self.name,
                     "--channel", NATIVE_CHANNEL, ",".join(events)]),
               "cannot enable the native events")
        types = []
        for context in contexts:
            types += ["--type", context]
        _check(_run(["add-context", "--userspace", "--session", self.name,
                     "--channel", NATIVE_CHANNEL] + types), "cannot add the native contexts")

    def enable_kernel(self, channel: str, contexts: list) -> None:
        """A kernel channel recording every system call and sched_switch with contexts,
        tracking no process yet (track_kernel_pid adds them)."""
        _check(_run(["enable-channel", "--kernel", "--session", self.name, channel]),
               "cannot create the kernel channel")
        # Nothing system-wide: the traced program's pid is tracked once it exists.
        _run(["untrack", "--kernel", "--session", self.name, "--pid", "--all"])
        _check(_run(["enable-event", "--kernel", "--session", self.name, "--channel", channel,
                     "--syscall", "--all"]), "cannot enable the system call events")
        _check(_run(["enable-event", "--kernel", "--session", self.name, "--channel", channel,
                     "sched_switch"]), "cannot enable sched_switch")
        types = []
        for context in contexts:
            types += ["--type", context]
        _check(_run(["add-context", "--kernel", "--session", self.name, "--channel", channel]
                    + types), "cannot add the kernel contexts")

    def track_kernel_pid(self, pid: int) -> None:
        """Records process pid's kernel events from now on."""
        _check(_run(["track", "--kernel", "--session", self.name, "--pid", str(pid)]),
               f"cannot track process {pid} in the kernel")

    def track_user_pid(self, pid: int) -> None:
        """Records the python:* events of process pid only (before start())."""
        _run(["untrack", "--userspace", "--session", self.name, "--vpid", "--all"])
        _check(_run(["track", "--userspace", "--session", self.name, "--vpid", str(pid)]),
               f"cannot track process {pid}")

    def track_user(self, uid: int) -> None:
        """Records the user-space events of user uid's processes only (LTTng's vuid
        tracker, before start()): a root session daemon takes the registrations of every
        user's traced programs, and without it any local user whose hook wakes on a session
        enabling python:* would write into this session's trace."""
        _check(_run(["track", "--userspace", "--session", self.name, "--vuid", str(uid)]),
               f"cannot track the processes of user {uid}")

    def start(self) -> None:
        what = f"cannot start session {self.name!r}"
        if not lttng_ctl.session_call("lttng_start_tracing", self.name, what):
            _check(_run(["start", self.name]), what)

    def stop(self) -> None:
        """Stop recording; returns once the trace is complete on disk."""
        pending = lttng_ctl.data_pending_function()
        if pending is None:
            _check(_run(["stop", self.name], timeout=600), f"cannot stop session {self.name!r}")
            return
        # `lttng stop` asks whether data is pending every 200 ms: asked every 5 ms
        # here, the wait ends when the consumer is done (0 to 200 ms sooner).
        what = f"cannot stop session {self.name!r}"
        if not lttng_ctl.session_call("lttng_stop_tracing_no_wait", self.name, what):
            _check(_run(["stop", "--no-wait", self.name], timeout=600), what)
        deadline = time.monotonic() + 600
        name = self.name.encode()
        while time.monotonic() < deadline:
            answer = pending(name)
            if answer == 0:
                return
            if answer < 0:  # the library cannot tell: let lttng wait its way
                _run(["stop", self.name], timeout=600)  # "already stopped", after the wait
                return
            time.sleep(0.005)
        raise LttngError(f"session {self.name!r} did not finish writing its trace in 600 s")

    def snapshot_record(self) -> None:
        """Write the buffers' current content into a new snapshot-N-DATE-TIME directory
        of the output (snapshot sessions)."""
        _check(_run(["snapshot", "record", "--session", self.name], timeout=600),
               f"cannot record a snapshot of session {self.name!r}")

    def discarded_events(self) -> int:
        """Events LTTng discarded in this session's channels (buffers full)."""
        import xml.etree.ElementTree as ElementTree

        result = _check(_run(["list", self.name], mi=True), f"cannot list session {self.name!r}")
        root = ElementTree.fromstring(result.stdout)
        return sum(int(node.text or 0) for node in root.iter(_MI_NS + "discarded_events"))

    def destroy(self, *, wait: bool = True) -> None:
        """Destroy the session (its trace stays). wait=False: do not wait for the
        session daemon to finish (about 0.5 s): right only once stop() has
        returned, when the trace is complete on disk."""
        if not wait:
            try:
                if lttng_ctl.session_call("lttng_destroy_session_no_wait", self.name,
                                 f"cannot destroy session {self.name!r}"):
                    return
            except LttngError:
                if session_output(self.name) is not None:
                    raise
                return  # already gone
        result = _run(["destroy", self.name] + ([] if wait else ["--no-wait"]), timeout=600)
        if result.returncode != 0 and session_output(self.name) is not None:
            # Failed, and the session is still there (one already gone is destroyed).
            raise LttngError(f"cannot destroy session {self.name!r}: {_error_line(result)}")


# lttng-tools' CTF packet index files (TRACE/ust/uid/UID/BITS/index/STREAM.idx): a header
# (magic, major, minor, the length of an entry), then one entry per packet, big-endian, whose
# sixth word is the stream's events discarded so far.
_INDEX_HEADER = struct.Struct(">IIII")
_INDEX_MAGIC = 0xC1F1DCC1
_INDEX_DISCARDED = struct.Struct(">40xQ")


def indexed_discarded(path: str) -> int | None:
    """Events LTTng discarded in the user-space streams of the complete (stopped) per-user
    trace at path, read from their packet indexes: each stream's last packet counts its
    losses so far. What `lttng list` says of the session, without its process (10 ms); None
    when an index is missing or not as expected (then ask the session daemon)."""
    files = glob.glob(os.path.join(glob.escape(path), "ust", "uid", "*", "*", "index", "*.idx"))
    if not files:
        return None
    total = 0
    for name in files:
        try:
            with open(name, "rb") as file:
                header = file.read(_INDEX_HEADER.size)
                if len(header) < _INDEX_HEADER.size:
                    return None
                magic, _, _, length = _INDEX_HEADER.unpack(header)
                if magic != _INDEX_MAGIC or length < _INDEX_DISCARDED.size:
                    return None
                # The last entry alone (a long run's index holds one per packet).
                entries = (os.fstat(file.fileno()).st_size - _INDEX_HEADER.size) // length
                if entries:
                    file.seek(_INDEX_HEADER.size + (entries - 1) * length)
                    entry = file.read(_INDEX_DISCARDED.size)
                    if len(entry) < _INDEX_DISCARDED.size:
                        return None
                    total += _INDEX_DISCARDED.unpack(entry)[0]
        except OSError:
            return None
    return total


def _size_bytes(size) -> int | None:
    """A size as lttng reads it (4096, 512k, 1M, 2G), in bytes; None for any
    other spelling."""
    text = str(size)
    units = {"k": 1 << 10, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    factor = units.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in units else text
    return int(digits) * factor if digits.isdigit() else None


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _mi_text(text: str, tag: str) -> str | None:
    import xml.etree.ElementTree as ElementTree

    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return None
    node = root.find(f".//{_MI_NS}{tag}")
    return node.text if node is not None else None
