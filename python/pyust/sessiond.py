"""The session daemon behind `pyust run`: which one `lttng` talks to, whether it
is running, stopped (SIGSTOP) or gone, and what to tell the user when it stops
or dies while the program runs (issue 7: the program runs on, the user learns
what happened, whether the trace is readable, and how to recover the buffers).

The `lttng` client talks to the machine's root session daemon when the user is
root, or is in the tracing group and that daemon runs; otherwise to the user's
own, whose files are in $LTTNG_HOME/.lttng ($HOME when LTTNG_HOME is unset).
Every session of the root daemon records the python:* events of every user's
programs, so its sessions are not private: `root_daemon_warning` says so.
"""

from __future__ import annotations

import grp
import os
import pwd
import shlex
import sys

from .lttng import LttngError, sessiond_is_running, start_sessiond

ROOT_RUNDIR = "/var/run/lttng"
TRACING_GROUP = "tracing"


class Daemon:
    """A session daemon: the pid in its pid file (None when there is none) and
    whether it is the machine's root daemon. (A plain class: dataclasses would
    import inspect, 10 ms of every pyust run.)"""

    def __init__(self, pid: int | None, is_root: bool):
        self.pid = pid
        self.is_root = is_root

    def __repr__(self) -> str:
        return f"Daemon(pid={self.pid!r}, is_root={self.is_root!r})"

    def state(self) -> str:
        """`running`, `stopped` (SIGSTOP, or stopped by a debugger) or `gone`."""
        seen = _process(self.pid) if self.pid is not None else None
        if seen is None or seen[0] != b"lttng-sessiond":
            # No daemon of that pid here: none runs, or it runs in another PID namespace (a
            # container given the host's /var/run/lttng): ask the daemon's socket.
            return "running" if sessiond_is_running() else "gone"
        state = seen[1]
        if state == b"Z":
            return "gone"
        return "stopped" if state in (b"T", b"t") else "running"


def _process(pid: int) -> tuple | None:
    """(command name, state letter) of process pid as /proc shows it; None when
    there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
        # The state follows the command name, which is in parentheses.
        head, tail = text.rsplit(b")", 1)
        return head.split(b"(", 1)[1], (tail.split() or [b"?"])[0]
    except (OSError, IndexError, ValueError):
        return None


def _read_pid(path: str) -> int | None:
    # The first line: lttng-sessiond rewrites the file without truncating it.
    try:
        with open(path) as pid_file:
            return int(pid_file.readline().strip())
    except (OSError, ValueError):
        return None


def _in_tracing_group() -> bool:
    try:
        gid = grp.getgrnam(TRACING_GROUP).gr_gid
    except KeyError:
        return False
    return gid == os.getegid() or gid in os.getgroups()


def _root_daemon_listens() -> bool:
    import socket  # a user of the tracing group's only

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        try:
            client.connect(os.path.join(ROOT_RUNDIR, "client-lttng-sessiond"))
        except OSError:
            return False
    return True


def current() -> Daemon:
    """The session daemon `lttng` talks to for this user (its pid may be None:
    no daemon runs)."""
    if os.geteuid() == 0 or (_in_tracing_group() and _root_daemon_listens()):
        return Daemon(_read_pid(os.path.join(ROOT_RUNDIR, "lttng-sessiond.pid")), True)
    home = os.environ.get("LTTNG_HOME") or os.path.expanduser("~")
    return Daemon(_read_pid(os.path.join(home, ".lttng", "lttng-sessiond.pid")), False)


def ensure_running() -> None:
    """Starts a session daemon (lttng-sessiond --daemonize) when none runs, and says so.
    A daemon whose pid file names a running process answers without an `lttng list`
    (20 ms and more). Raises LttngError."""
    if current().state() != "running" and not sessiond_is_running():
        start_sessiond()
        print("pyust: no session daemon was running: started one (lttng-sessiond --daemonize)",
              file=sys.stderr)


def check_not_stopped(daemon: Daemon) -> None:
    """Raises LttngError, at once, when the daemon is stopped: every `lttng`
    command would wait for it."""
    if daemon.state() == "stopped":
        raise LttngError(f"the session daemon (pid {daemon.pid}) is stopped (SIGSTOP): "
                         f"resume it with `kill -CONT {daemon.pid}`")


def _tracing_group_members() -> list:
    try:
        group = grp.getgrnam(TRACING_GROUP)
    except KeyError:
        return []
    members = set(group.gr_mem)
    members |= {user.pw_name for user in pwd.getpwall() if user.pw_gid == group.gr_gid}
    return sorted(members)


def root_daemon_warning(daemon: Daemon) -> str | None:
    """One line when the session runs in the root session daemon and someone
    besides root can use that daemon: then the members of the tracing group
    (this user among them, when not root) can record the program's python:*
    events with sessions of their own. None otherwise."""
    if not daemon.is_root:
        return None
    members = _tracing_group_members()
    if os.geteuid() == 0 and not members:
        return None
    who = f" ({', '.join(members)})" if members else ""
    return (f"pyust: warning: this session runs in the root session daemon: root and every "
            f"member of group {TRACING_GROUP}{who} can record this program's python:* "
            f"events with sessions of their own")


def _has_buffers(shm_path: str) -> bool:
    """Whether a stream's ring buffer file (not only metadata) is under shm_path."""
    for _, _, files in os.walk(shm_path):
        if any(name != "metadata" for name in files):
            return True
    return False


def crash_lines(daemon: Daemon, state: str, session_name: str, trace: str | None,
                shm_path: str | None) -> list:
    """What to print when the daemon stopped or died while the program ran:
    one line saying what happened and whether the trace is readable, then the
    recovery command when there is one."""
    if state == "stopped":
        return [f"pyust: the session daemon (pid {daemon.pid}) is stopped (SIGSTOP): session "
                f"{session_name} was left recording and its trace is incomplete; resume the "
                f"daemon (`kill -CONT {daemon.pid}`), then `lttng destroy {session_name}` "
                f"completes the trace in {trace}"]
    from .babeltrace import count_events  # the daemon died: what does the trace hold?

    counted = count_events(trace, fast=False, timeout=120) if trace and os.path.isdir(trace) else None
    if counted is None:
        readable = f"the trace in {trace} is not readable (the daemon died before writing it out)"
    else:
        readable = (f"the trace in {trace} is readable: {counted} events, up to when "
                    "the daemon died")
    pid = f" (pid {daemon.pid})" if daemon.pid else ""
    lines = [f"pyust: the session daemon{pid} died while the program ran: {readable}"]
    if shm_path and not _has_buffers(shm_path):
        lines.append(f"pyust: no buffers are left in {shm_path} (the consumer daemon removed "
                     "them when it exited): nothing for lttng-crash to recover")
    elif shm_path:
        recovered = (trace.rstrip("/") if trace else shm_path.rstrip("/")) + "-crash"
        lines.append(f"pyust: its buffers survived in {shm_path}: recover the last events with "
                     f"`lttng-crash -x {shlex.quote(recovered)} {shlex.quote(shm_path)}`, "
                     f"then `pyust report {shlex.quote(recovered)}`")
    else:
        lines.append("pyust: to recover the last events after such a crash, trace with "
                     "`pyust run --shm-path DIR` (the buffers stay in DIR for lttng-crash)")
    return lines
