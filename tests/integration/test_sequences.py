"""Exact event sequences of fixed programs, traced by the real hook into a real
LTTng session and read back with babeltrace2."""

from __future__ import annotations

from collections import Counter

from pyusttest.environment import FAST, PYTHON, python_version
from pyusttest.run import run_hooked, run_pyust, setprofile_flow
from pyusttest.traces import assert_balanced, folded

FOO_BAR_BAZ = """\
def baz():
    pass

def bar():
    baz()

def foo():
    bar()

if __name__ == '__main__':
    foo()
"""


def main_thread(trace, pid=None):
    """The events of the first process's main thread (vtid == vpid)."""
    pid = pid or trace.pids()[0]
    return trace.threads()[(pid, pid)]


def test_foo_bar_baz_exact_sequence(session, make_program):
    program = make_program(FOO_BAR_BAZ)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    assert trace.program_flow(program) == [
        ("call", "<module>"), ("call", "foo"), ("call", "bar"), ("call", "baz"),
        ("return", "baz", 0), ("return", "bar", 0), ("return", "foo", 0),
        ("return", "<module>", 0),
    ]
    # Nothing else runs between the program's first call and its last return:
    # pyust's own frames and the runner's start-up are not in the trace.
    flow = trace.flow(main_thread(trace))
    first = flow.index(("call", "<module>"))
    assert flow[first:first + 8] == trace.program_flow(program)
    assert first == 0
    # A plain dump names the function on every call event.
    names = [e["fields"]["name"] for e in trace.of("python:call")]
    assert names[:4] == ["<module>", "foo", "bar", "baz"]


def test_every_id_is_registered_once_with_its_names(session, make_program):
    program = make_program(FOO_BAR_BAZ)
    assert run_hooked([program]).returncode == 0
    trace = session.read()
    registrations = Counter(e["fields"]["id"] for e in trace.of("python:code"))
    assert registrations and max(registrations.values()) == 1
    codes = trace.codes
    for e in trace.of("python:call", "python:return"):
        assert e["fields"]["id"] in codes
    foo = next(c for c in codes.values() if c["qualname"] == "foo")
    assert foo["module"] == "__main__"
    assert foo["file"] == program
    assert foo["first_line"] == 7
    assert foo["name"] == "foo"
    module = next(c for c in codes.values() if c["qualname"] == "<module>")
    assert module["first_line"] == 1
    # ids carry the registering pid in their high half
    pid = main_thread(trace)[0]["vpid"]
    assert all(i >> 32 == pid for i in codes)


def test_code_names_a_dump_can_trust(session, make_program):
    """python:code records co_name (renamed code keeps its qualified name) and never an
    empty file: babeltrace2 2.0.4 would show an empty string as an earlier event's value."""
    program = make_program("""\
        def wrapper():
            pass
        wrapper.__code__ = wrapper.__code__.replace(co_name="renamed")
        wrapper()
        exec(compile("def made():\\n    pass\\nmade()\\n", "", "exec"), {})
        """)
    assert run_hooked([program]).returncode == 0
    codes = session.read().codes.values()
    renamed = next(c for c in codes if c["name"] == "renamed")
    assert renamed["file"] == program
    assert renamed["qualname"] == ("wrapper" if python_version(PYTHON) >= (3, 11) else "renamed")
    made = next(c for c in codes if c["qualname"] == "made")
    assert (made["module"], made["file"], made["name"]) == ("?", "<no file name>", "made")
    assert all(c[field] for c in codes for field in ("module", "qualname", "file", "name"))


def test_recursion(session, make_program):
    program = make_program("""\
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)
        fact(4)
        """)
    assert run_hooked([program]).returncode == 0
    trace = session.read()
    assert trace.program_flow(program) == (
        [("call", "<module>")] + [("call", "fact")] * 4 + [("return", "fact", 0)] * 4
        + [("return", "<module>", 0)])


def test_exception_through_three_frames(session, make_program):
    program = make_program("""\
        def c():
            raise ValueError("boom")
        def b():
            c()
        def a():
            b()
        try:
            a()
        except ValueError:
            pass
        """)
    assert run_hooked([program]).returncode == 0
    trace = session.read()
    assert trace.program_flow(program) == [
        ("call", "<module>"), ("call", "a"), ("call", "b"), ("call", "c"),
        ("return", "c", 1), ("return", "b", 1), ("return", "a", 1),
        ("return", "<module>", 0),
    ]


def test_generator_partially_consumed_then_closed(session, make_program):
    program = make_program("""\
        def gen():
            yield 1
            yield 2
            yield 3
        g = gen()
        next(g)
        next(g)
        g.close()
        """)
    assert run_hooked([program]).returncode == 0
    trace = session.read()
    # Each resumption is a call, each yield a return. close() throws
    # GeneratorExit in, which unwinds the frame (a return with the unwind flag);
    # 3.13 closes a generator suspended outside any try block without resuming
    # it, 3.14 resumes it again: the interpreter's own profile events say which.
    resumed = setprofile_flow(program).count(("call", "gen"))
    assert resumed in (2, 3)
    closing = [("call", "gen"), ("return", "gen", 1)] if resumed == 3 else []
    assert trace.program_flow(program) == [
        ("call", "<module>"),
        ("call", "gen"), ("return", "gen", 0),
        ("call", "gen"), ("return", "gen", 0),
        *closing,
        ("return", "<module>", 0),
    ]


def test_generator_throw_and_coroutine(session, make_program):
    program = make_program("""\
        import asyncio
        def gen():
            try:
                yield 1
            except KeyError:
                yield 2
        g = gen()
        next(g)
        g.throw(KeyError)
        async def inner():
            await asyncio.sleep(0)
            return 5
        async def outer():
            return await inner()
        asyncio.run(outer())
        """)
    assert run_hooked([program]).returncode == 0
    trace = session.read()
    flow = trace.program_flow(program)
    assert flow[:5] == [("call", "<module>"), ("call", "gen"), ("return", "gen", 0),
                        ("call", "gen"), ("return", "gen", 0)]
    # The coroutines suspend at the sleep and resume: two calls each.
    assert flow.count(("call", "outer")) == 2
    assert flow.count(("call", "inner")) == 2
    for thread_events in trace.threads().values():
        assert_balanced(trace, thread_events)


def test_threads_started_before_and_after_start(session, make_program):
    program = make_program("""\
        import threading
        import pyust

        def work():
            return sum(range(10))

        def early_worker(go, done):
            go.wait()
            work()
            done.set()

        def late_worker():
            work()

        go, done = threading.Event(), threading.Event()
        early = threading.Thread(target=early_worker, args=(go, done), name="early")
        early.start()
        pyust.start()
        go.set()
        done.wait()
        late = threading.Thread(target=late_worker, name="late")
        late.start()
        late.join()
        early.join()
        pyust.stop()
        """)
    from pyusttest.run import run_plain

    result = run_plain([program])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    named = {e["fields"]["name"]: e["fields"]["tid"] for e in trace.of("python:thread")}
    assert {"MainThread", "early", "late"} <= set(named)
    threads = trace.threads()
    pid = main_thread(trace)[0]["vpid"]
    early = trace.program_flow(program, threads[(pid, named["early"])])
    late = trace.program_flow(program, threads[(pid, named["late"])])
    # The early thread was inside early_worker when tracing started: its stack
    # is announced first, then its new calls follow, and all of it closes.
    assert early == [("call", "early_worker"), ("call", "work"), ("return", "work", 0),
                     ("return", "early_worker", 0)]
    assert late == [("call", "late_worker"), ("call", "work"), ("return", "work", 0),
                    ("return", "late_worker", 0)]
    for events in threads.values():
        assert_balanced(trace, events)
    # The main thread: its stack at start() is announced, and closed at stop().
    assert trace.program_flow(program, threads[(pid, pid)]) == [
        ("call", "<module>"), ("return", "<module>", 0)]


def test_fork_child_records_its_own_pid_and_stack(session, make_program):
    program = make_program("""\
        import os

        def child_work():
            return 42

        def parent_work():
            return 7

        def spawn():
            pid = os.fork()
            if pid == 0:
                child_work()
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            assert status == 0
            parent_work()

        spawn()
        """)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    parent, child = trace.pids()
    threads = trace.threads()
    assert trace.program_flow(program, threads[(parent, parent)]) == [
        ("call", "<module>"), ("call", "spawn"), ("call", "parent_work"),
        ("return", "parent_work", 0), ("return", "spawn", 0), ("return", "<module>", 0)]
    # The child continues the parent's stack, announced as calls; os._exit
    # leaves it open.
    child_events = threads[(child, child)]
    assert trace.program_flow(program, child_events) == [
        ("call", "<module>"), ("call", "spawn"), ("call", "child_work"),
        ("return", "child_work", 0)]
    assert any(e["name"] == "python:process" for e in child_events)
    assert any(e["name"] == "python:thread" and e["fields"]["tid"] == child
               for e in child_events)


EXECS_ITSELF = """\
import os, sys

HOOK = %r

def before():
    return 1

def after():
    return 2

def failed_exec():
    try:
        os.execv("/nonexistent/python", ["python"])
    except OSError:
        return "failed"

def main():
    if sys.argv[-1] == "again":
        after()
        return
    before()
    failed_exec()
    # Found in the last directory of PATH: the tries before it fail.
    path = "/nonexistent/bin:/usr/nonexistent:" + os.path.dirname(HOOK[0])
    os.execvpe(os.path.basename(HOOK[0]), HOOK + [__file__, "again"],
               dict(os.environ, PATH=path))

main()
"""


def test_an_exec_ends_the_frames_that_made_it(session, make_program):
    """An exec replaces the process image: the frames that made it return there, and the
    program exec'd (traced too, under the same pid and tid, its code ids counted from 1
    again) starts a stack of its own with its own names. An exec that cannot succeed leaves
    the frames running: os.execvp's tries through PATH add nothing."""
    hook = [PYTHON, "-m", "pyust", *(["--fast"] if FAST else []), "--"]
    program = make_program(EXECS_ITSELF % hook)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    (pid,) = trace.pids()
    # Each event named by the registration in force when it came.
    names, flow = {}, []
    for e in trace.threads()[(pid, pid)]:
        if e["name"] == "python:code":
            names[e["fields"]["id"]] = (e["fields"]["file"], e["fields"]["qualname"])
        elif e["name"] in ("python:call", "python:return"):
            file, qualname = names[e["fields"]["id"]]
            if file == program:
                flow.append((e["name"][7:], qualname))
    assert flow == [
        ("call", "<module>"), ("call", "main"), ("call", "before"), ("return", "before"),
        ("call", "failed_exec"), ("return", "failed_exec"), ("return", "main"),
        ("return", "<module>"),
        ("call", "<module>"), ("call", "main"), ("call", "after"), ("return", "after"),
        ("return", "main"), ("return", "<module>")]
    # The report names both programs' frames, none nested in the other's.
    stacks = folded(run_pyust(["report", str(session.path), "-f", "folded", "--modules",
                               "__main__"]).stdout)
    assert stacks.keys() == {"__main__:<module>", "__main__:<module>;__main__:main",
                             "__main__:<module>;__main__:main;__main__:before",
                             "__main__:<module>;__main__:main;__main__:failed_exec",
                             "__main__:<module>;__main__:main;__main__:after"}, stacks


def test_multiprocessing_fork_child(session, make_program):
    program = make_program("""\
        import multiprocessing as mp

        def in_child(x):
            return x * 2

        if __name__ == "__main__":
            ctx = mp.get_context("fork")
            p = ctx.Process(target=in_child, args=(3,))
            p.start()
            p.join()
            assert p.exitcode == 0
        """)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    parent = main_thread(trace)[0]["vpid"]
    child_calls = [e for e in trace.of("python:call") if e["vpid"] != parent]
    assert any(trace.codes[e["fields"]["id"]]["qualname"] == "in_child" for e in child_calls)


def test_calls_counted_like_sys_setprofile(session, make_program, tmp_path):
    """Every Python call of a fixed program is in the trace: per function,
    as many python:call events as sys.setprofile sees 'call' events."""
    body = """\
        import json, re
        class Shape:
            def __init__(self, n):
                self.n = n
            def area(self):
                return self.n * self.n
        def squares(k):
            for i in range(k):
                yield Shape(i).area()
        def parse(text):
            return [m.group(0) for m in re.finditer(r"[a-z]+", text)]
        def main():
            total = sum(squares(50))
            data = json.loads(json.dumps({"a": list(range(20)), "b": parse("ab cd ef")}))
            try:
                {}["missing"]
            except KeyError:
                pass
            return total, data
        for _ in range(3):
            main()
        """
    program = make_program(body)
    counter = make_program(f"""\
        import sys, runpy, json
        counts = {{}}
        def prof(frame, event, arg):
            if event == "call":
                c = frame.f_code
                key = c.co_filename + ":" + str(c.co_firstlineno) + ":" + c.co_name
                counts[key] = counts.get(key, 0) + 1
        sys.setprofile(prof)
        runpy.run_path({program!r}, run_name="__main__")
        sys.setprofile(None)
        print(json.dumps(counts))
        """, name="counter.py")
    from pyusttest.run import run_plain
    import json

    expected_raw = json.loads(run_plain([counter]).stdout)
    expected = {k: v for k, v in expected_raw.items() if k.startswith(program + ":")}
    assert run_hooked([program]).returncode == 0
    trace = session.read()
    got = Counter()
    for e in trace.of("python:call"):
        c = trace.codes[e["fields"]["id"]]
        if c["file"] == program:
            got[f"{c['file']}:{c['first_line']}:{c['qualname'].rsplit('.', 1)[-1]}"] += 1
    assert dict(got) == expected
    assert sum(expected.values()) > 200


def test_c_calls(session, make_program):
    program = make_program("""\
        def f(items):
            return sorted(items), len(items)
        f([3, 1, 2])
        """)
    assert run_hooked([program], flags=["--c-calls"]).returncode == 0
    trace = session.read()
    events = main_thread(trace)
    c_names = [(e["fields"]["owner"], e["fields"]["name"]) for e in events
               if e["name"] == "python:c_call"]
    assert ("builtins", "sorted") in c_names
    assert ("builtins", "len") in c_names
    depth = 0
    for e in events:
        depth += {"python:c_call": 1, "python:c_return": -1}.get(e["name"], 0)
        assert depth >= 0
    assert depth == 0
    # Off by default.
    assert trace.of("python:line") == []


def test_lines(session, make_program):
    program = make_program("""\
        def f(x):
            y = x + 1
            z = y * 2
            return z
        f(1)
        """)
    assert run_hooked([program], flags=["--lines"]).returncode == 0
    trace = session.read()
    codes = trace.codes
    f_lines = [e["fields"]["line"] for e in trace.of("python:line")
               if codes[e["fields"]["id"]]["qualname"] == "f"]
    assert f_lines == [2, 3, 4]
    assert trace.program_flow(program) == [
        ("call", "<module>"), ("call", "f"), ("return", "f", 0), ("return", "<module>", 0)]
