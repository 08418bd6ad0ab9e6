"""The TCP connections between this machine's LTTng daemons and a relay daemon.

Two things pyust needs to know or do about them (issue 26):

- Who listens on a port of this machine (`listener_owners`): root's `pyust run --live`
  must not stream its trace to a relay daemon that another user started on loopback.
- Whether a live session's relay daemon still answers (`Watch`). The consumer daemon
  sends to the relay daemon over plain blocking TCP (lttng-sessiond's
  LTTNG_NETWORK_SOCKET_TIMEOUT, unset by default, is read at its start only): when the
  relay vanishes (a cut link) or stalls (a stopped daemon), the consumer daemon waits
  in send() or recv() until TCP gives up, after tcp_retries2 (about 15 minutes), and
  the session daemon, waiting for it, answers no command of anyone: every session of
  the machine stalls. The watch holds duplicates of the daemons' sockets of this
  session (pidfd_getfd(2), Linux 5.6, with the right to ptrace the daemons: root's for
  the root session daemon), reads their progress (TCP_INFO) and, when no byte has moved
  for `timeout` seconds while data waits or pyust waits for the daemons, shuts them down:
  the daemons' blocked calls fail at once, LTTng drops the relay of that session, and
  the session daemon answers again.

Everything here reads /proc; nothing raises for a daemon or socket that went away.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import struct
import threading
import time

from .args import describe_user

_ESTABLISHED, _LISTEN = 0x01, 0x0A
_DAEMONS = (b"lttng-sessiond", b"lttng-consumerd")
_PIDFD_GETFD = 438  # the same number on every architecture (the unified syscall table)
# struct tcp_info (linux/tcp.h): the fields read, by offset.
_TCP_INFO_SIZE = 160
_STATE, _UNACKED, _BYTES_ACKED, _BYTES_RECEIVED, _NOTSENT = 0, 24, 120, 128, 144
POLL_SECONDS = 0.2


class Entry:
    """One line of /proc/net/tcp or tcp6."""

    def __init__(self, local: tuple, remote: tuple, state: int, uid: int, inode: int):
        self.local, self.remote = local, remote  # (address text, port)
        self.state, self.uid, self.inode = state, uid, inode


def _address(text: str) -> tuple:
    """(address, port) of /proc/net/tcp's HEX:PORT (the address in 32-bit words of the
    host's byte order)."""
    address, port = text.split(":")
    words = [int(address[i:i + 8], 16) for i in range(0, len(address), 8)]
    raw = struct.pack(f"={len(words)}I", *words)
    family = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, raw), int(port, 16)


def table() -> list:
    """Every TCP socket of this network namespace (IPv4 and IPv6), as Entry."""
    entries = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as stream:
                lines = stream.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            try:
                entries.append(Entry(_address(fields[1]), _address(fields[2]),
                                     int(fields[3], 16), int(fields[7]), int(fields[9])))
            except (ValueError, OSError):
                continue
    return entries


_LOOPBACK_REACHABLE = ("0.0.0.0", "127.0.0.1", "::", "::ffff:127.0.0.1", "::ffff:0.0.0.0")


def listener_owners(port: int) -> list:
    """The uids of the sockets listening on port where 127.0.0.1:port reaches them."""
    return [entry.uid for entry in table()
            if entry.state == _LISTEN and entry.local[1] == port
            and entry.local[0] in _LOOPBACK_REACHABLE]


def describe_listener(port: int, uid: int) -> str:
    """`user NAME (uid N), lttng-relayd (pid P)`: who holds that listening socket, as far
    as /proc lets this user see."""
    who = describe_user(uid)
    inodes = {entry.inode for entry in table() if entry.state == _LISTEN
              and entry.local[1] == port and entry.uid == uid}
    for pid, _, comm in _holders(inodes, None):
        return f"{who}, {comm.decode(errors='replace')} (pid {pid})"
    return who


def _holders(inodes: set, commands) -> list:
    """(pid, fd, command name) of the processes holding sockets of these inodes; only
    processes named in commands (None: any)."""
    found = []
    if not inodes:
        return found
    targets = {f"socket:[{inode}]" for inode in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm", "rb") as stream:
                comm = stream.read().strip()
            if commands is not None and comm not in commands:
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in targets:
                    found.append((int(pid), int(fd), comm))
        except OSError:
            continue
    return found


def _resolve(host: str) -> set:
    """The addresses of host as /proc/net/tcp writes them (IPv4 also as IPv4-mapped)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return set()
    addresses = set()
    for family, _, _, _, sockaddr in infos:
        addresses.add(sockaddr[0])
        if family == socket.AF_INET:
            addresses.add(f"::ffff:{sockaddr[0]}")
    return addresses


def _pidfd_getfd(pid: int, fd: int) -> socket.socket:
    """A duplicate of process pid's descriptor fd, as a socket. Raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        duplicate = libc.syscall(_PIDFD_GETFD, pidfd, fd, 0)
        if duplicate < 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error))
    finally:
        os.close(pidfd)
    return socket.socket(fileno=duplicate)


class Watch:
    """The connections that this machine's session and consumer daemons open to the
    relay daemon at host:ports from now on (those of the live session being made), and a
    thread that cuts them once the relay daemon stops answering (see the module's
    docstring). Use begin_wait()/end_wait() around each call that waits for the
    daemons (stop, destroy), and close() at the end."""

    def __init__(self, host: str, ports: tuple, timeout: float):
        self.addresses = _resolve(host)
        self.ports = set(ports)
        self.timeout = timeout
        self.began = time.monotonic()
        self.lost_at = None  # monotonic time since which the relay daemon made no progress
        self.lost_wall = None  # the same, as time.time()
        self.unwatchable = None  # why the connections could not be watched (OSError text)
        self._before = self._connections()
        self._sockets = {}  # inode: duplicate socket
        self._tried = set()  # inodes whose duplicate was asked for
        self._waiting = 0  # calls waiting for the daemons
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pyust-relay-watch",
                                        daemon=True)
        self._thread.start()

    def _connections(self) -> set:
        """The inodes of the connections to the relay daemon's ports, now."""
        return {entry.inode for entry in table()
                if entry.state != _LISTEN and entry.remote[1] in self.ports
                and (not self.addresses or entry.remote[0] in self.addresses)}

    def begin_wait(self) -> None:
        with self._lock:
            self._waiting += 1

    def end_wait(self) -> None:
        with self._lock:
            self._waiting -= 1

    def _adopt(self) -> None:
        """Takes duplicates of the daemons' new connections to the relay daemon."""
        new = self._connections() - self._before - self._tried
        self._tried |= new
        for pid, fd, _ in _holders(new, _DAEMONS):
            try:
                duplicate = _pidfd_getfd(pid, fd)
            except OSError as error:
                self.unwatchable = self.unwatchable or f"pidfd_getfd: {error.strerror}"
                continue
            inode = os.fstat(duplicate.fileno()).st_ino
            if inode in new and inode not in self._sockets:
                self._sockets[inode] = duplicate
            else:  # the daemon reused the descriptor meanwhile
                duplicate.close()

    def _progress(self) -> tuple:
        """(bytes moved so far, whether data waits to be sent or acknowledged)."""
        moved, outstanding = 0, False
        for duplicate in self._sockets.values():
            try:
                info = duplicate.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
            except OSError:
                continue
            if len(info) < _NOTSENT + 4 or info[_STATE] != _ESTABLISHED:
                continue
            moved += sum(struct.unpack_from("=QQ", info, _BYTES_ACKED))
            unacked, = struct.unpack_from("=I", info, _UNACKED)
            notsent, = struct.unpack_from("=I", info, _NOTSENT)
            outstanding = outstanding or unacked > 0 or notsent > 0
        return moved, outstanding

    def _run(self) -> None:
        # Signals to pyust go to its main thread, as they went before this thread was
        # (pyust run blocks them there while the program runs, and passes them on).
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        moved, since = None, time.monotonic()
        while not self._done.wait(POLL_SECONDS):
            self._adopt()
            now = time.monotonic()
            current, outstanding = self._progress()
            with self._lock:
                waiting = self._waiting > 0
            if current != moved or not (outstanding or waiting):
                moved, since = current, now
            elif now - since >= self.timeout and self._sockets:
                self.lost_at, self.lost_wall = since, time.time() - (now - since)
                self._cut()
                return

    def _cut(self) -> None:
        """Aborts the connections: the daemons' blocked send() and recv() return at once
        (EPIPE, end of file), and their close() sends a reset (linger 0), not a FIN that
        TCP would retransmit to a relay daemon that is not there."""
        self._tried = set(self._sockets)  # asks again for any that was refused
        self._adopt()
        for duplicate in self._sockets.values():
            try:
                duplicate.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     struct.pack("ii", 1, 0))
                duplicate.shutdown(socket.SHUT_RDWR)
            except OSError:
                continue

    def close(self) -> None:
        """Stops the thread and lets go of the duplicates (after the session's end: they
        keep the connections open)."""
        self._done.set()
        self._thread.join()
        for duplicate in self._sockets.values():
            duplicate.close()
        self._sockets.clear()

    def lost_text(self) -> str | None:
        """What the summary says of a relay daemon that stopped answering, or None."""
        if self.lost_at is None:
            return None
        clock = time.strftime("%H:%M:%S", time.localtime(self.lost_wall))
        return (f"the relay daemon stopped answering at {clock} "
                f"({self.lost_at - self.began:.1f} s into the session): pyust cut the "
                f"connection to it after {self.timeout:g} s without progress; the trace it "
                "holds lacks the events from about then on")

