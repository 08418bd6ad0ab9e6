"""How many events `pyust run`'s processes handed to LTTng, as they counted them.

pyust run makes a private directory (mode 0700, removed when it ends) and every
process it traces (the program, its traced Python children, their os.fork()
children) counts its events into a file of its own there, mapped shared (see
src/hook/tally.hpp): the files hold every event counted however the processes
end. Their sum, less what LTTng discarded, is what the trace holds, without
reading the trace again (babeltrace2's counter takes as long as the run).

A process whose start the session missed notes that there too (lost_starts()).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile

# tally.hpp's EventTally: events, fast-mode records, then how long the process waited for the
# session before it ran unrecorded and how long it then ran before the session recorded it.
_WORDS = struct.Struct("=QQ")
_START = struct.Struct("=QQ")


class LostStart:
    """A process whose start the session did not record: it waited `waited` seconds for the
    session, then ran `lost` seconds before the session recorded it (None: never, while
    the run lasted)."""

    def __init__(self, pid: int, waited: float, lost: float | None):
        self.pid = pid
        self.waited = waited
        self.lost = lost

    @classmethod
    def of(cls, pid: int, words) -> "LostStart | None":
        """The LostStart of (waited_ns, lost_ns) as the hook keeps them (pyust._native's
        lost_start()); None when the process did not give up waiting."""
        waited, lost = words
        return cls(pid, waited / 1e9, lost / 1e9 if lost else None) if waited else None

    def describe(self) -> str:
        """The summary's line for it (pyust run, pyust attach)."""
        if self.lost is None:
            what = "is not in the trace at all: the session never recorded it"
        else:
            what = (f"ran {self.lost:.3f} s before the session recorded it: the trace lacks "
                    "that start")
        return (f"pyust: process {self.pid} {what} (LTTng-UST had not registered with the "
                f"session daemon when the process gave up waiting, after {self.waited:.1f} s: "
                "a busy machine, or LTTNG_UST_REGISTER_TIMEOUT; --start-timeout waits longer)")


class Tally:
    def __init__(self, directory: str):
        self.directory = directory

    @classmethod
    def create(cls) -> "Tally | None":
        """A new private directory; None when it cannot be made (the run counts
        the trace instead)."""
        try:
            return cls(os.path.realpath(tempfile.mkdtemp(prefix="pyust-tally-")))
        except OSError:
            return None

    def _files(self):
        """(pid, the file's first bytes) of each process's file."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if not name.startswith("tally-"):
                continue
            try:
                with open(os.path.join(self.directory, name), "rb") as stream:
                    data = stream.read(_WORDS.size + _START.size)
            except OSError:
                continue
            try:
                pid = int(name.split("-")[1])
            except (IndexError, ValueError):
                pid = None
            yield pid, data

    def lost_starts(self) -> list:
        """The LostStart of every process that ran before the session recorded it, by pid."""
        lost = []
        for pid, data in self._files():
            if pid is None or len(data) < _WORDS.size + _START.size:
                continue
            start = LostStart.of(pid, _START.unpack_from(data, _WORDS.size))
            if start:
                lost.append(start)
        return sorted(lost, key=lambda start: start.pid)

    def total(self) -> int | None:
        """The events counted by every process so far; None when no process
        counted (its hook could not make its file, or none was traced)."""
        total = 0
        found = False
        for _, data in self._files():
            if len(data) >= _WORDS.size:
                found = True
                total += sum(_WORDS.unpack_from(data))
        return total if found else None

    def processes(self) -> int:
        """How many processes counted their events here."""
        return len({pid for pid, _ in self._files()})

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
