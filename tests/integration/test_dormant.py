"""Dormant hooks: with pyust on but no session recording, the interpreter
hooks are removed; they come back when a session enables the python events,
and go again when none does (LTTng keeps a stopped session's events enabled:
the hooks go at `lttng destroy` or `lttng disable-event`)."""

from __future__ import annotations

import subprocess

from pyusttest.environment import PYTHON, child_env
from pyusttest.sessions import Session, slow_replies_library
from pyusttest.traces import assert_balanced

LONG_RUNNING = """\
import sys, time
import pyust

def tick(n):
    return helper(n) + 1

def helper(n):
    return n * 2

pyust.start()
print("hooked" if pyust.is_hooked() else "dormant", flush=True)
for line in sys.stdin:
    if line.strip() == "quit":
        break
    # wait until the hooks follow the session: on or off, as asked
    want = line.strip() == "on"
    deadline = time.monotonic() + 10
    while pyust.is_hooked() != want and time.monotonic() < deadline:
        time.sleep(0.002)
    for i in range(100):
        tick(i)
    print("hooked" if pyust.is_hooked() else "dormant", flush=True)
pyust.stop()
"""


def started_and_stopped_twice(program: str, tmp_path, env: dict) -> list:
    """Runs the LONG_RUNNING program with env; starts and stops a session twice while it
    runs, each time waiting for the hooks to follow; returns the two traces."""
    child = subprocess.Popen([PYTHON, program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=env)

    def say(word):
        child.stdin.write(word + "\n")
        child.stdin.flush()
        return child.stdout.readline().strip()

    traces = []
    try:
        assert child.stdout.readline().strip() == "dormant"  # no session yet
        for round_ in range(2):
            session = Session(tmp_path, directory=f"trace-{round_}")
            try:
                session.start()
                assert say("on") == "hooked"
                traces.append(session.read())
            finally:
                session.destroy()
            assert say("off") == "dormant"
        child.stdin.write("quit\n")
        child.stdin.flush()
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return traces


def assert_woken_up(trace) -> None:
    """The trace of a session started while LONG_RUNNING was dormant: its 100 ticks, the
    names of every code its events use, and the stack announced at wake-up."""
    calls = [e for e in trace.of("python:call") if e["fields"]["name"] == "tick"]
    assert len(calls) == 100
    # Every code id the trace uses is named in it (the wake-up rundown).
    codes = trace.codes
    for e in trace.of("python:call", "python:return"):
        assert e["fields"]["id"] in codes
    assert any(e["fields"]["name"] == "MainThread" for e in trace.of("python:thread"))
    # The stack announced at wake-up opens the frames the returns close;
    # the module's frame is still running when the session stops. (The
    # rundown's events come from pyust's watcher thread, with no calls.)
    main = [events for events in trace.threads().values() if trace.flow(events)]
    assert len(main) == 1
    open_frames = assert_balanced(trace, main[0], closed=False)
    assert [codes[i]["qualname"] for i in open_frames] == ["<module>"]


def test_sessions_started_and_stopped_twice_while_running(make_program, tmp_path):
    for trace in started_and_stopped_twice(make_program(LONG_RUNNING), tmp_path, child_env()):
        assert_woken_up(trace)


def test_hooks_come_back_once_the_session_records(make_program, tmp_path):
    """LTTng-UST turns a starting session's tracepoints on, then waits for the session
    daemon's answers before the session records. With the answers slowed down, that gap
    outlasts the dormant hook's poll: the hooks must still come back (and the rundown be
    made) only once the session records, or the program's first calls and the names of
    its codes are lost (before the fix, none of the 100 ticks was recorded)."""
    env = child_env(LD_PRELOAD=slow_replies_library(tmp_path),
                    LTTNG_UST_REGISTER_TIMEOUT="30000")
    for trace in started_and_stopped_twice(make_program(LONG_RUNNING), tmp_path, env):
        assert_woken_up(trace)


def test_events_count_only_what_a_session_was_handed(make_program, tmp_path):
    """pyust.emitted_events() counts the events LTTng was handed: with the hooks
    kept on (dormant=False) but no session listening, none."""
    program = make_program("""\
        import pyust
        def f():
            pass
        pyust.start(dormant=False)
        for _ in range(100):
            f()
        pyust.stop()
        print(pyust.is_hooked(), pyust.emitted_events())
        """)
    result = subprocess.run([PYTHON, program], capture_output=True, text=True, env=child_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout == "False 0\n"
