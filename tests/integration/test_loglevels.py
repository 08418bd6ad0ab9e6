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


@pytest.fixture
def recorded(tmp_path, make_program):
    """record(*loglevel options) -> the set of event names the session recorded of a
    program traced with lines and C calls on."""
    program = make_program(PROGRAM)
    names = []

    def record(*options: str) -> set:
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
        return {event["name"] for event in read_trace(path, tmp_path, expand=False).events}

    yield record
    for name in names:
        lttng("destroy", name, check=False)


def test_without_a_level_every_event(recorded):
    assert {"python:code", "python:process", "python:thread", "python:call", "python:return",
            "python:line", "python:c_call", "python:c_return"} <= recorded()


def test_function_level_leaves_out_the_lines(recorded):
    names = recorded("--loglevel", "TRACE_DEBUG_FUNCTION")
    assert {"python:code", "python:process", "python:call", "python:return", "python:c_call",
            "python:c_return"} <= names
    assert "python:line" not in names


def test_info_level_is_who_ran_what_without_a_timeline(recorded):
    names = recorded("--loglevel-only", "TRACE_INFO")
    assert {"python:code", "python:process", "python:thread"} <= names
    assert not names & {"python:call", "python:return", "python:line", "python:c_call",
                        "python:c_return", "python:batch"}, names
