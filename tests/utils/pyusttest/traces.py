"""Traces read back: every event of a CTF trace as Python data, read with babeltrace2's Python
bindings in a subprocess (read_trace.py, beside this module, run by Debian's interpreter under
a timeout), and the checks many tests make on them (balanced stacks, folded stacks).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pyusttest.environment import FAST, READ_TIMEOUT, READER, plugin_dir


@dataclass
class Trace:
    events: list
    discarded: int

    @property
    def codes(self) -> dict:
        """id -> the python:code fields of its last registration."""
        return {e["fields"]["id"]: e["fields"] for e in self.events if e["name"] == "python:code"}

    def of(self, *names) -> list:
        return [e for e in self.events if e["name"] in names]

    def pids(self) -> list:
        """The processes' vpids in the order of their first events: a forked child after its
        parent, a program run after another after it. (Not sorted: pids wrap around at the
        kernel's pid_max, and a child's can then be the smaller.)"""
        return list(dict.fromkeys(e["vpid"] for e in self.events))

    def threads(self) -> dict:
        """(vpid, vtid) -> that thread's events, in order."""
        by_thread = defaultdict(list)
        for e in self.events:
            by_thread[(e["vpid"], e["vtid"])].append(e)
        return dict(by_thread)

    def flow(self, events=None) -> list:
        """call/return events as ('call', qualname) / ('return', qualname, unwind)."""
        codes = self.codes
        out = []
        for e in self.events if events is None else events:
            if e["name"] == "python:call":
                out.append(("call", codes[e["fields"]["id"]]["qualname"]))
            elif e["name"] == "python:return":
                out.append(("return", codes[e["fields"]["id"]]["qualname"], e["fields"]["unwind"]))
        return out

    def program_flow(self, program: str, events=None) -> list:
        """flow() restricted to code defined in the file `program`."""
        codes = self.codes
        own = {i for i, c in codes.items() if c["file"] == program}
        kept = [e for e in (self.events if events is None else events)
                if e["name"] in ("python:call", "python:return") and e["fields"]["id"] in own]
        return self.flow(kept)


def _read(path, expand: bool | None, *options) -> str:
    """The output of read_trace.py on the trace at path (through filter.pyust.expand when
    expand, or by default in the fast mode)."""
    command = [READER, str(Path(__file__).with_name("read_trace.py")), str(path), *options]
    if FAST if expand is None else expand:
        command += ["--expand", plugin_dir()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=READ_TIMEOUT)
    assert result.returncode == 0, result.stderr
    return result.stdout


def read_trace(path, owner: Path | None = None, *, expand: bool | None = None) -> Trace:
    """The trace at path. A session records every process that emits python:*
    events on the machine; with owner, keep only the processes of the test's
    programs: those that registered code from a file under owner, and their
    forked children (which call code ids carrying such a process's pid).
    expand: read through filter.pyust.expand (default: in the fast mode)."""
    lines = [json.loads(line) for line in _read(path, expand).splitlines()]
    events = lines[:-1]
    if owner is not None:
        prefix = str(owner) + os.sep
        own = {e["vpid"] for e in events
               if e["name"] == "python:code" and e["fields"]["file"].startswith(prefix)}
        grown = True
        while grown:
            children = {e["vpid"] for e in events
                        if e["name"] == "python:call" and e["fields"]["id"] >> 32 in own}
            grown = not children <= own
            own |= children
        events = [e for e in events if e["vpid"] in own]
    return Trace(events=events, discarded=lines[-1]["discarded"])


def count_trace(path, *, expand: bool | None = None) -> tuple:
    """({event name: events}, events reported discarded) of the trace at path, without
    reading the events into Python (read_trace.py --count): for traces of millions."""
    last = json.loads(_read(path, expand, "--count"))
    return last["counts"], last["discarded"]


def assert_balanced(trace: Trace, thread_events: list, *, closed: bool = True):
    """A thread's calls and returns nest: every return closes the innermost
    open call of the same code, depth never goes negative, and (closed)
    nothing stays open."""
    stack = []
    for e in thread_events:
        if e["name"] == "python:call":
            stack.append(e["fields"]["id"])
        elif e["name"] == "python:return":
            assert stack, f"return without call: {e}"
            assert stack[-1] == e["fields"]["id"], (
                f"return of {trace.codes[e['fields']['id']]['qualname']} closes "
                f"{trace.codes[stack[-1]]['qualname']}")
            stack.pop()
    if closed:
        assert not stack, f"still open: {[trace.codes[i]['qualname'] for i in stack]}"
    return stack


def folded(text: str) -> dict:
    """Folded-stack lines (`frame;frame value`) -> {stack: ns}; every line must be one."""
    stacks = {}
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        assert stack and value.isdigit(), f"not a folded line: {line!r}"
        stacks[stack] = stacks.get(stack, 0) + int(value)
    return stacks
