"""How many events `pyust run`'s processes handed to LTTng, as they counted them.

pyust run makes a private directory (mode 0700, removed when it ends) and every
process it traces (the program, its traced Python children, their os.fork()
children) counts its events into a file of its own there, mapped shared (see
src/hook/tally.hpp): the files hold every event counted however the processes
end. Their sum, less what LTTng discarded, is what the trace holds, without
reading the trace again (babeltrace2's counter takes as long as the run).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile

_WORDS = struct.Struct("=QQ")  # events, fast-mode records (tally.hpp's EventTally)


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

    def total(self) -> int | None:
        """The events counted by every process so far; None when no process
        counted (its hook could not make its file, or none was traced)."""
        total = 0
        found = False
        try:
            names = os.listdir(self.directory)
        except OSError:
            return None
        for name in names:
            if not name.startswith("tally-"):
                continue
            try:
                with open(os.path.join(self.directory, name), "rb") as stream:
                    data = stream.read(_WORDS.size)
            except OSError:
                continue
            if len(data) == _WORDS.size:
                found = True
                total += sum(_WORDS.unpack(data))
        return total if found else None

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
