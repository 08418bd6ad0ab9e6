"""The python provider's log levels: `lttng enable-event -u 'python:*' --loglevel LEVEL`
selects as it does for other providers (tracepoints/python_tp.h, pyust-events(7)).
A session of the user's own, the program run under `python -m pyust` (hook only)."""

from __future__ import annotations

import pytest

from pyusttest.run import run_pyust
from pyusttest.sessions import lttng, unique_name
from pyusttest.traces import read_trace

PROGRAM = """\
def f(x):
    y = abs(x) + 1  # a C call: python:c_call and c_return
    return y

for i in range(3):
    f(i)
"""

# Two asyncio tasks, one named.
TASKS = """\
import asyncio


async def main():
    await asyncio.gather(asyncio.sleep(0), asyncio.create_task(asyncio.sleep(0), name="napper"))


asyncio.run(main())
"""


@pytest.fixture
def recorded(tmp_path, make_program):
    """record(*loglevel options, source=) -> the events the session recorded of a program
    (source, by default PROGRAM) traced with lines and C calls on."""
    names = []

    def record(*options: str, source: str = PROGRAM) -> list:
        program = make_program(source)
        name = unique_name("loglevel")
        names.append(name)
        path = tmp_path / name
        lttng("create", name, "--output", str(path))
        lttng("enable-channel", "-u", "-s", name, "chan")
        lttng("enable-event", "-u", "-s", name, "-c", "chan", "python:*", *options)
        lttng("add-context", "-u", "-s", name, "-c", "chan", "-t", "vpid", "-t", "vtid")
        lttng("start", name)
        result = run_pyust(["--lines", "--c-calls", "--", program])
        assert result.returncode == 0, result.stderr
        lttng("stop", name)
        return read_trace(path, tmp_path, expand=False).events

    yield record
    for name in names:
        lttng("destroy", name, check=False)


def event_names(events: list) -> set:
    return {event["name"] for event in events}


def test_without_a_level_every_event(recorded):
    assert {"python:code", "python:process", "python:thread", "python:call", "python:return",
            "python:line", "python:c_call", "python:c_return"} <= event_names(recorded())


def test_function_level_leaves_out_the_lines(recorded):
    names = event_names(recorded("--loglevel", "TRACE_DEBUG_FUNCTION"))
    assert {"python:code", "python:process", "python:call", "python:return", "python:c_call",
            "python:c_return"} <= names
    assert "python:line" not in names


def test_info_level_is_who_ran_what_without_a_timeline(recorded):
    names = event_names(recorded("--loglevel-only", "TRACE_INFO"))
    assert {"python:code", "python:process", "python:thread"} <= names
    assert not names & {"python:call", "python:return", "python:line", "python:c_call",
                        "python:c_return", "python:batch"}, names


def test_info_level_names_the_asyncio_tasks(recorded):
    """The inventory has the program's asyncio tasks, without their steps."""
    events = recorded("--loglevel-only", "TRACE_INFO", source=TASKS)
    tasks = [e["fields"]["name"] for e in events if e["name"] == "python:task"]
    assert "napper" in tasks and len(tasks) >= 3, tasks  # main, napper, gather's sleep
    assert not event_names(events) & {"python:task_step", "python:batch"}
