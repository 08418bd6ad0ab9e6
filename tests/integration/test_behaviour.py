"""The traced program behaves exactly as untraced: exit status, output,
tracebacks, signals, threads at shutdown; and the hook survives what the
program does to the interpreter."""

from __future__ import annotations

import pytest

from pyusttest.environment import PYTHON, backend, child_env, python_version
from pyusttest.run import run_hooked, run_plain
from pyusttest.traces import assert_balanced

PROGRAMS = {
    "normal": "print('out')\n",
    "sys_exit": "import sys\nprint('bye')\nsys.exit(3)\n",
    "sys_exit_message": "import sys\nsys.exit('fatal: no input')\n",
    "exception": "def f():\n    raise ValueError('bad value')\nf()\n",
    "chained": ("def f():\n    try:\n        {}['k']\n    except KeyError as e:\n"
                "        raise RuntimeError('wrapped') from e\nf()\n"),
    "keyboard_interrupt": "def f():\n    raise KeyboardInterrupt\nf()\n",
    "os_exit": "import os, sys\nprint('x', flush=True)\nos._exit(5)\n",
    "syntax_error": "def f(:\n    pass\n",
    "argv": "import sys\nprint(sys.argv, __name__, __file__ == sys.argv[0])\n",
    "daemon_at_exit": (
        "import threading, time\n"
        "def spin():\n    while True:\n        sum(range(100))\n"
        "for _ in range(3):\n    threading.Thread(target=spin, daemon=True).start()\n"
        "time.sleep(0.05)\nprint('main done')\n"),
    "atexit": ("import atexit\ndef bye():\n    print('atexit ran')\n"
               "atexit.register(bye)\n"),
}


def called(session) -> list:
    """The names of the functions the test's programs called, in order."""
    return [e["fields"]["name"] for e in session.read().of("python:call")]


# CPython 3.10 can crash a daemon thread that waits for the GIL while the
# interpreter is torn down (seen untraced too, under strace): the longer the
# process takes to exit after that, the likelier. With pyust, 15 runs in 300
# crashed; with 3.9, 3.11, 3.12 and 3.13, none in 200 each.
OLD_DAEMON_CRASH = pytest.mark.skipif(
    python_version(PYTHON) == (3, 10),
    reason="CPython 3.10 itself crashes daemon threads at exit at times (doc/forks-and-signals.md)")


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=OLD_DAEMON_CRASH) if n == "daemon_at_exit" else n
    for n in sorted(PROGRAMS)])
def test_same_status_and_output_as_untraced(session, make_program, name):
    program = make_program(PROGRAMS[name], name=f"{name}.py")
    args = [program, "a", "b"]
    plain = run_plain(args)
    traced = run_hooked(args)
    assert traced.returncode == plain.returncode
    assert traced.stdout == plain.stdout
    assert traced.stderr == plain.stderr


@OLD_DAEMON_CRASH
@pytest.mark.parametrize("runs", [10, pytest.param(30, marks=pytest.mark.stress)])
def test_daemon_threads_at_exit_repeatedly(session, make_program, runs):
    program = make_program(PROGRAMS["daemon_at_exit"])
    for _ in range(runs):
        result = run_hooked([program])
        assert result.returncode == 0, result.stderr
        assert result.stdout == "main done\n"


def test_atexit_handlers_are_traced(session, make_program):
    program = make_program(PROGRAMS["atexit"])
    assert run_hooked([program]).returncode == 0
    trace = session.read()
    assert ("call", "bye") in trace.program_flow(program)


def test_hook_survives_recursion_error(session, make_program):
    program = make_program("""\
        import sys
        sys.setrecursionlimit(200)
        def down(n):
            return down(n + 1)
        def after():
            return 1
        try:
            down(0)
        except RecursionError:
            pass
        after()
        """)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    flow = trace.program_flow(program)
    assert flow[-3:] == [("call", "after"), ("return", "after", 0), ("return", "<module>", 0)]
    downs = [f for f in flow if f[1] == "down"]
    assert len(downs) > 100
    assert all(f[2] == 1 for f in downs if f[0] == "return")
    for events in trace.threads().values():
        assert_balanced(trace, events)


def test_module_target_runs_like_python_m(session, make_program, tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tool.py").write_text(
        "import sys\ndef main():\n    print(__name__, sys.argv[1:])\n"
        "if __name__ == '__main__':\n    main()\n")
    plain = run_plain(["-m", "pkg.tool", "x"], cwd=tmp_path)
    traced = run_hooked(["-m", "pkg.tool", "x"], cwd=tmp_path)
    assert traced.returncode == plain.returncode == 0
    assert traced.stdout == plain.stdout == "__main__ ['x']\n"
    trace = session.read()
    assert ("call", "main") in trace.flow()


def test_session_started_after_the_program_gets_the_names(session, make_program, tmp_path):
    """Code registered before any session recorded is named again (rundown)
    when a session starts: automatically, and on pyust.rundown()."""
    import subprocess

    from pyusttest.environment import PYTHON, child_env
    from pyusttest.sessions import Session

    session.destroy()  # this test runs its own, later session
    program = make_program("""\
        import sys, time
        import pyust
        def early():
            return 1
        pyust.start()
        early()
        print("ready", flush=True)
        sys.stdin.readline()
        deadline = time.monotonic() + 10
        while not pyust.is_hooked() and time.monotonic() < deadline:
            time.sleep(0.002)  # dormant: the hooks come back when the session records
        early()
        pyust.rundown()
        pyust.stop()
        """)
    child = subprocess.Popen([PYTHON, program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=child_env())
    try:
        assert child.stdout.readline() == "ready\n"
        late = Session(tmp_path, directory="late-trace")
        try:
            late.start()
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.wait(timeout=60) == 0
            trace = late.read()
        finally:
            late.destroy()
    finally:
        child.kill()
        child.wait()
    early_ids = [e["fields"]["id"] for e in trace.of("python:call")
                 if e["fields"]["name"] == "early"]
    assert early_ids
    registrations = [e for e in trace.of("python:code") if e["fields"]["id"] == early_ids[0]]
    # One from the automatic rundown when the hooks woke up for the session,
    # one from the explicit pyust.rundown().
    assert len(registrations) == 2
    first_call = trace.events.index(next(e for e in trace.of("python:call")
                                         if e["fields"]["id"] == early_ids[0]))
    assert trace.events.index(registrations[0]) < first_call
    assert any(e["fields"]["name"] == "MainThread" for e in trace.of("python:thread"))


def test_api_errors_name_the_fix(make_program):
    program = make_program("""\
        import cProfile, pyust
        try:
            pyust.start()
            pyust.start()
        except pyust.TracerError as e:
            print("twice:", e)
        pyust.stop()
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            pyust.start()
            print("cprofile: alongside")  # 3.12+: each has its sys.monitoring tool id
            pyust.stop()
        except pyust.TracerError as e:
            print("cprofile:", e)
        profiler.disable()
        with pyust.tracing():
            print("active:", pyust.is_active())
        print("after:", pyust.is_active())
        """)
    result = run_plain([program])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("twice: ") and "pyust.stop()" in lines[0]
    if backend(PYTHON) == "monitoring":
        assert lines[1] == "cprofile: alongside"
    else:
        assert lines[1].startswith("cprofile: ") and "another profiler" in lines[1]
    assert lines[2:] == ["active: True", "after: False"]


def test_another_profiler_started_later(session, make_program):
    """cProfile enabled while pyust traces: from 3.12, and on 3.11's eval-frame back end,
    both run side by side; on the setprofile back end the thread has one profile hook, and
    pyust says it lost it."""
    program = make_program("""\
        import cProfile, pyust
        def before():
            pass
        def during():
            pass
        pyust.start()
        before()
        profiler = cProfile.Profile()
        profiler.enable()
        during()
        profiler.disable()
        pyust.stop()
        # cProfile saw the call too: pyust did not displace it.
        print("profiled" if any(getattr(s.code, "co_name", "") == "during"
                                for s in profiler.getstats()) else "missed")
        """)
    result = run_plain([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "profiled\n"
    trace = session.read()
    names = [e["fields"]["name"] for e in trace.of("python:call")]
    assert "before" in names
    # The back end this interpreter got: sys.monitoring (3.12+) and the frame-evaluation
    # function leave the profile hook to cProfile.
    (used,) = {e["fields"]["backend"] for e in trace.of("python:process")}
    assert used in (backend(PYTHON), "eval-frame")
    if used in ("monitoring", "eval-frame"):
        assert "during" in names
        assert result.stderr == ""
    else:
        assert "during" not in names
        assert result.stderr.startswith("pyust: warning: sys.setprofile() replaced pyust's hook")
        assert len(result.stderr.splitlines()) == 1


def test_a_trace_function_sees_no_frame_of_pyusts_on_imports(session, make_program):
    """A debugger or coverage tool (sys.settrace) stepping through the program's imports
    while pyust traces meets none of pyust's Python code: pyust's sys.meta_path entry (it
    waits for greenlet) is a C function. CPython's test_trace saw pyust._greenlet in the
    trace module's coverage of an import."""
    make_program("def value():\n    return 42\n", name="fresh_module.py")
    program = make_program("""\
        import os, sys, pyust
        pyust.start()
        seen = []
        def tracer(frame, event, arg):
            if event == "call":
                seen.append(frame.f_code.co_filename)
            return None
        sys.settrace(tracer)
        import fresh_module
        fresh_module.value()
        sys.settrace(None)
        pyust.stop()
        own = os.path.dirname(pyust.__file__) + os.sep
        print(sorted({f for f in seen if f.startswith(own)}),
              any(f.endswith("fresh_module.py") for f in seen))
        """)
    result = run_plain([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[] True\n"
    assert "value" in called(session)


def test_frame_objects_come_when_the_program_asks(session, make_program):
    """pyust reads the interpreter's frames without making frame objects of them (CPython
    makes one at the first ask and keeps it): a program that creates one in a garbage
    collector callback while a trace function resumes a generator, as CPython's test_frame
    does, gets what it gets untraced. sys.monitoring's first event of a code object made
    one on 3.12 and 3.13: the callback then never ran during the resumption. (Up to 3.11 a
    profile function gets a frame object for every frame: there, pyust's setprofile back
    end gives what cProfile gives. From 3.12 the eval-frame back end hands over at the
    first call made under a trace function; the program sets one once beforehand, since the
    hand-over allocates, and a collection at every allocation would run there.)"""
    program = make_program("""\
        import gc, sys
        def trace(frame, event, arg):
            return trace
        def generator():
            while True:
                yield
        def main():
            asked = []
            def callback(phase, info):
                asked.append(sys._getframe().f_back.f_back)
                gc.callbacks.remove(callback)
            # A first trace function, for pyust's hand-over (3.12+) to happen here: it
            # allocates, which would run the collection before the trace function does.
            sys.settrace(trace)
            (lambda: None)()
            sys.settrace(None)
            g = generator()
            next(g)
            gc.collect()
            gc.disable()
            gc.set_threshold(1, 0, 0)
            sys.settrace(trace)
            gc.callbacks.append(callback)
            gc.enable()
            next(g)
            sys.settrace(None)
            gc.set_threshold(700, 10, 10)
            print(len(asked), asked[:1] == [g.gi_frame])
        if sys.argv[1:] == ["pyust"]:
            import pyust
            pyust.start()
            main()
            pyust.stop()
        elif sys.argv[1:] == ["cProfile"]:
            import cProfile
            profiler = cProfile.Profile()
            profiler.enable()
            main()
            profiler.disable()
        else:
            main()
        """)
    outputs = {}
    for how in ("untraced", "pyust", "cProfile"):
        result = run_plain([program, how])
        assert result.returncode == 0, result.stderr
        outputs[how] = result.stdout
    trace = session.read()
    assert "generator" in [e["fields"]["name"] for e in trace.of("python:call")]
    # The trace function makes the eval-frame back end hand over (3.12+): two back ends.
    used = {e["fields"]["backend"] for e in trace.of("python:process")}
    # Untraced, the collection runs once, during the resumption: the case is armed.
    assert outputs["untraced"].startswith("1 "), outputs
    assert outputs["pyust"] == outputs["cProfile" if "setprofile" in used else "untraced"]


def test_a_trace_function_sees_the_same_events_with_pyust(session, make_program):
    """A sys.settrace function (a debugger, coverage.py's tracer) gets the same events while
    pyust traces as without it, here through an `async for`. From 3.12 a frame-evaluation
    function makes the interpreter report each step's StopIteration twice (CPython's
    test_sys_settrace): pyust's steps aside for the version's own back end."""
    program = make_program("""\
        import sys
        class Letters:
            def __init__(self, text):
                self.letters = iter(text)
            def __aiter__(self):
                return self
            async def __anext__(self):
                try:
                    return next(self.letters)
                except StopIteration:
                    raise StopAsyncIteration
        async def spell():
            async for letter in Letters("abc"):
                pass
        def main():
            seen = []
            def tracer(frame, event, arg):
                if frame.f_code.co_filename == __file__:
                    seen.append((frame.f_code.co_name, frame.f_lineno, event))
                return tracer
            coroutine = spell()
            sys.settrace(tracer)
            try:
                coroutine.send(None)
            except StopIteration:
                pass
            sys.settrace(None)
            return seen
        if sys.argv[1:] == ["traced"]:
            import pyust
            pyust.start()
            print(main())
            pyust.stop()
        else:
            print(main())
        """)
    plain = run_plain([program])
    traced = run_plain([program, "traced"])
    assert plain.returncode == 0 and traced.returncode == 0, plain.stderr + traced.stderr
    assert "'exception'" in plain.stdout
    assert traced.stdout == plain.stdout
    names = [name.split(".")[-1] for name in called(session)]  # 3.10: no qualified names
    assert names.count("__anext__") == 4, names


def test_a_tool_taking_pyusts_tool_id_after_stop_sees_every_event(make_program):
    """sys.monitoring (3.12+): code that pyust's filter answered DISABLE stays disabled for
    its tool id until someone restarts events; the next tool to take that id after
    pyust.stop() must see every call, as on a fresh interpreter. (Forced onto sys.monitoring:
    the frame-evaluation function takes no tool id.)"""
    if backend(PYTHON) != "monitoring":
        pytest.skip(f"{PYTHON} has no sys.monitoring: pyust uses the profile hook there")
    program = make_program("""\
        import sys, pyust
        M = sys.monitoring
        def filtered_out():
            pass
        pyust.start(modules="nothing_here", dormant=False)
        ids = [i for i in range(6) if M.get_tool(i) == "pyust"]
        filtered_out()
        filtered_out()
        pyust.stop()
        seen = []
        M.use_tool_id(ids[0], "next tool")
        M.register_callback(ids[0], M.events.PY_START,
                            lambda code, offset: seen.append(code.co_name))
        M.set_events(ids[0], M.events.PY_START)
        filtered_out()
        M.set_events(ids[0], 0)
        print(len(ids), seen)
        """)
    result = run_plain([program], env=child_env(PYUST_BACKEND="monitoring"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1 ['filtered_out']\n"


def test_coverage_py_and_pyust_together(session, make_program, tmp_path):
    """coverage.py (Debian's, for Debian's interpreter) measures a program
    that pyust traces: both get what they need."""
    import subprocess

    if subprocess.run([PYTHON, "-c", "import coverage"], capture_output=True).returncode:
        pytest.skip(f"coverage.py is not installed for {PYTHON} (Debian: python3-coverage)")
    program = make_program("""\
        import pyust
        def covered():
            return 1
        def uncovered():
            return 2
        with pyust.tracing():
            covered()
        """)
    data = tmp_path / "coverage.data"
    run = run_plain(["-m", "coverage", "run", f"--data-file={data}", program])
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    report = run_plain(["-m", "coverage", "report", "-m", f"--data-file={data}", program])
    # Line 5 (the body of uncovered) is the only line not run.
    row = next(line for line in report.stdout.splitlines() if line.startswith(program))
    assert row.split()[1:] == ["7", "1", "86%", "5"]
    names = called(session)
    assert "covered" in names
