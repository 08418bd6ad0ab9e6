"""`pyust run --live`: a live session streamed through lttng-relayd.

A live session sends its trace to a relay daemon (lttng-relayd), which writes it to its
own output directory and, at the same time, serves it to live readers: babeltrace2's
src.ctf.lttng-live, `pyust top`, Trace Compass. The relay daemon can run on this
machine or on another one:

    pyust run --live -- app.py                   a relay daemon on 127.0.0.1 (started
                                                 if none listens there)
    pyust run --live --relayd net://HOST -- ...  the relay daemon of HOST

Ports (lttng's defaults): 5342 control and 5343 data (sessiond -> relayd), 5344 live
(relayd -> readers). Without --relayd, pyust streams only to a relay daemon of the
caller's or root's: one that another user started on those ports of loopback would get
the trace (and feed the readers), so pyust refuses it, naming its owner; --relayd URL
names a relay daemon the user chose. A relay daemon that stops answering during the
session (a lost network, a stopped daemon) is cut off after --relayd-timeout seconds
without progress (pyust.relay_link), so that stopping the session is bounded and the
session daemon answers again; the summary says from when the relay's trace is
incomplete. pyust prints the URL readers open,
net://RELAYD/host/HOSTNAME/SESSION, and, at the end, where the relay daemon wrote the
trace: the directory itself when the relay daemon runs here (found from its command
line), else the path under its output directory.

Every failure raises LttngError (one line) or, for a URL of another form, ValueError.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

from .lttng import LttngError, Session

# relay_link, socket and glob are imported where used: `pyust run` without --live imports
# this module for its constants only (the options' defaults).

CONTROL_PORT, DATA_PORT, LIVE_PORT = 5342, 5343, 5344
# Seconds without a byte moving to or from the relay daemon, while data waits or pyust
# waits for the daemons, before pyust cuts the relay off (--relayd-timeout): TCP
# retransmits a lost segment within about 3 s at first; a relay daemon that reads
# nothing for 5 s has stalled.
DEFAULT_TIMEOUT = 5.0
# Flush the buffers to the relay daemon every 200 ms (lttng's default is 1 s): `pyust
# top` refreshes every second, and a table should not wait for half of its data.
DEFAULT_TIMER_US = 200000
_URL = re.compile(r"(net6?)://(\[[^\]]+\]|[^:/\[\]]+)(?::(\d+))?(?::(\d+))?/?")


class Relay:
    """The relay daemon a live session streams to."""

    def __init__(self, url: str, host: str, control_port: int, live_port: int, timer_us: int,
                 data_port: int = DATA_PORT, timeout: float = DEFAULT_TIMEOUT):
        self.url = url
        self.host = host
        self.control_port = control_port
        self.data_port = data_port
        self.live_port = live_port
        self.timer_us = timer_us
        self.timeout = timeout
        self.watch = None  # the session's relay_link.Watch, once created

    def create(self, name: str, trace_format: str | None = None) -> Session:
        """The live session, its connections to the relay daemon watched (LiveSession)."""
        from . import relay_link

        watch = relay_link.Watch(self.host, (self.control_port, self.data_port), self.timeout)
        try:
            session = LiveSession.create(name, None, live_url=self.url,
                                         live_timer_us=self.timer_us, trace_format=trace_format)
        except BaseException:
            watch.close()
            raise
        self.watch = session.watch = watch
        return session

    def lost(self) -> str | None:
        """The summary's line for a relay daemon that stopped answering, or None."""
        text = self.watch.lost_text() if self.watch else None
        return f"pyust: {text}" if text else None

    def live_url(self, name: str) -> str:
        import socket

        host = "localhost" if _is_loopback(self.host) else self.host
        port = "" if self.live_port == LIVE_PORT else f":{self.live_port}"
        return f"net://{host}{port}/host/{socket.gethostname()}/{name}"

    def announce(self, name: str) -> None:
        """Prints the URL live readers open."""
        print(f"pyust: live session {name}: pyust top {self.live_url(name)}", file=sys.stderr)

    def trace_path(self, name: str, no_count: bool) -> tuple:
        """(where the relay daemon wrote the trace, whether not to count its events): the
        directory when the relay daemon runs on this machine, else its path under the
        relay daemon's output directory (nothing here to count)."""
        import glob
        import socket

        relative = os.path.join(socket.gethostname(), f"{name}-*")
        if self.watch and self.watch.lost_at is not None:
            no_count = True  # an incomplete trace, which the relay daemon may still write
        output = local_relayd_output(self.control_port) if _is_local(self.host) else None
        if output:
            found = sorted(glob.glob(os.path.join(output, glob.escape(socket.gethostname()),
                                                  f"{glob.escape(name)}-*")))
            if found:
                return found[-1], no_count
        return (f"{self.host}:{relative} (under the output directory of its lttng-relayd, "
                "-o, default ~/lttng-traces)", True)


class LiveSession(Session):
    """A live session (Relay.create): stopping and destroying it are bounded by the
    watch over its relay daemon, which cuts the relay off when it stops answering;
    once it is cut off, what the relay daemon did not get is lost, and stop() and
    destroy() do what they still can without raising for it."""

    watch = None  # its relay_link.Watch, set by Relay.create

    def stop(self) -> None:
        if self.watch.unwatchable:
            print(f"pyust: cannot watch the connection to the relay daemon "
                  f"({self.watch.unwatchable}): if it stops answering, stopping may wait "
                  "until TCP gives up (about 15 minutes)", file=sys.stderr)
        self.watch.begin_wait()
        try:
            super().stop()
        except LttngError:
            if self.watch.lost_at is None:
                raise
        finally:
            self.watch.end_wait()

    def discarded_events(self) -> int | None:
        """As Session's, or None when LTTng cannot say once the relay daemon was cut off
        (LTTng 2.16 then fails to list the session's streams)."""
        try:
            return super().discarded_events()
        except LttngError:
            if self.watch.lost_at is None:
                raise
            return None

    def destroy(self, *, wait: bool = True) -> None:
        self.watch.begin_wait()
        try:
            super().destroy(wait=wait)
        finally:
            self.watch.end_wait()
            self.watch.close()


def prepare(relayd: str | None, live_port: int, live_timer: int,
            timeout: float = DEFAULT_TIMEOUT) -> Relay:
    """The relay daemon of `run --live [--relayd URL]`: relayd's, or without it one on
    127.0.0.1, started when none listens there (and said so), never one of another user
    than the caller or root (check_loopback_owners). Raises ValueError when relayd is not
    a net://HOST[:CTRL_PORT[:DATA_PORT]] URL, LttngError."""
    if relayd:
        match = _URL.fullmatch(relayd)
        if not match:
            raise ValueError(f"--relayd {relayd!r}: expected net://HOST[:CTRL_PORT"
                             f"[:DATA_PORT]], e.g. net://tracehost or net://10.0.0.7:5342:5343")
        _, host, control, data = match.groups()
        return Relay(relayd, host.strip("[]"), int(control or CONTROL_PORT), live_port,
                     live_timer, int(data or DATA_PORT), timeout)
    check_loopback_owners((CONTROL_PORT, DATA_PORT, live_port))
    if not _listens("127.0.0.1", CONTROL_PORT):
        start_relayd()
        print(f"pyust: no relay daemon was listening on 127.0.0.1:{CONTROL_PORT}: started one "
              f"on loopback (lttng-relayd -d, ports {CONTROL_PORT}-{LIVE_PORT}; it keeps "
              "running)", file=sys.stderr)
    return Relay(f"net://127.0.0.1:{CONTROL_PORT}:{DATA_PORT}", "127.0.0.1", CONTROL_PORT,
                 live_port, live_timer, DATA_PORT, timeout)


def check_loopback_owners(ports: tuple) -> None:
    """Raises LttngError when a socket that another user than the caller or root owns
    listens on one of these ports of loopback: the trace would stream to that user's
    relay daemon (control and data ports), or readers would read that user's (live
    port). Root's is everyone's: root reads every trace of the machine anyway."""
    from . import relay_link

    me = os.geteuid()
    for port in ports:
        for uid in relay_link.listener_owners(port):
            if uid not in (me, 0):
                raise LttngError(
                    f"127.0.0.1:{port} is held by {relay_link.describe_listener(port, uid)}, "
                    "not by you or root: pyust will not stream the trace to another user's "
                    "relay daemon; stop it, or name the relay daemon to use with --relayd URL")


def start_relayd() -> None:
    """Starts `lttng-relayd -d` listening on loopback only (lttng's default ports and
    output directory). Raises LttngError."""
    relayd = shutil.which("lttng-relayd")
    if relayd is None:
        raise LttngError("lttng-relayd is not installed: apt-get install lttng-tools")
    command = [relayd, "-d", "-C", f"tcp://127.0.0.1:{CONTROL_PORT}",
               "-D", f"tcp://127.0.0.1:{DATA_PORT}", "-L", f"tcp://127.0.0.1:{LIVE_PORT}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    deadline = time.monotonic() + 5
    while result.returncode == 0 and not _listens("127.0.0.1", CONTROL_PORT):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if result.returncode != 0 or not _listens("127.0.0.1", CONTROL_PORT):
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise LttngError("cannot start a relay daemon (lttng-relayd -d): " +
                         (lines[-1] if lines else f"exit status {result.returncode}") +
                         f"; are ports {CONTROL_PORT}-{LIVE_PORT} taken? (--relayd URL)")


def local_relayd_output(control_port: int) -> str | None:
    """The output directory of the lttng-relayd of this machine that listens on
    control_port (its -o/--output, else $LTTNG_HOME or $HOME of that process, plus
    lttng-traces), or None when there is none or it cannot be read (another user's)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                argv = [a.decode(errors="replace") for a in stream.read().split(b"\0") if a]
            if not argv or os.path.basename(argv[0]) != "lttng-relayd":
                continue
            options = _options(argv[1:])
            control = options.get("control-port", f"tcp://0.0.0.0:{CONTROL_PORT}")
            if not control.rstrip("/").endswith(f":{control_port}"):
                continue
            cwd = os.readlink(f"/proc/{pid}/cwd")
            if "output" in options:
                return os.path.join(cwd, options["output"])
            with open(f"/proc/{pid}/environ", "rb") as stream:
                environ = dict(e.decode(errors="replace").partition("=")[::2]
                               for e in stream.read().split(b"\0") if b"=" in e)
            home = environ.get("LTTNG_HOME") or environ.get("HOME")
            return os.path.join(home, "lttng-traces") if home else None
        except OSError:
            continue
    return None


_SHORT = {"-C": "control-port", "-D": "data-port", "-L": "live-port", "-o": "output"}


def _options(argv: list) -> dict:
    """lttng-relayd's options that matter here, by long name."""
    options = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, value = None, None
        if arg.startswith("--") and "=" in arg:
            name, value = arg[2:].split("=", 1)
        elif arg.startswith("--"):
            name = arg[2:]
        elif arg[:2] in _SHORT:
            name, value = _SHORT[arg[:2]], arg[2:].lstrip("=") or None
        if name in _SHORT.values():
            if value is None and i + 1 < len(argv):
                i += 1
                value = argv[i]
            options[name] = value
        i += 1
    return options


def _listens(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def _is_local(host: str) -> bool:
    import socket

    if _is_loopback(host) or host in (socket.gethostname(), socket.getfqdn()):
        return True
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return False
    return address.startswith("127.")
