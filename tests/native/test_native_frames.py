"""Native frames end to end: extensions built with `pyust cflags`, recorded by
`pyust run --native`, named by babeltrace2's debug-info, merged into the
Python stacks by sink.pyust.report. Real gcc, cython3, LTTng, babeltrace2.

A session records every traced process of the machine: every check here is
restricted to the program's own pid (it writes it to a file).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from pyusttest.environment import PYTHON, child_env
from pyusttest.run import run_pyust
from pyusttest.traces import folded

# Cython's functions by the Python names they implement: outer's wrapper and implementation
# (__pyx_pw_4foo2_1outer, __pyx_pf_4foo2_outer) are one frame.
CHAIN = "__main__:<module>;__main__:outer;foo2.outer;foo2.inner;helper_c"
RAW_CHAIN = ("__main__:<module>;__main__:outer;__pyx_pw_4foo2_1outer;__pyx_pf_4foo2_outer;"
             "__pyx_f_4foo2_inner;helper_c")

PROGRAM = """\
import os, sys
sys.path.insert(0, {examples!r})
import foo2

with open({pid_file!r}, "w") as f:
    f.write(str(os.getpid()))

def outer(path, count):
    return foo2.outer(path, count)

print(outer({out_file!r}, {count}))
"""


def report(trace: Path, pid: int, fmt: str, *options: str) -> subprocess.CompletedProcess:
    """`pyust report`, which puts babeltrace2's debug-info filter in front of
    its sink when the trace holds native frames."""
    return run_pyust(["report", str(trace), "--pid", str(pid), "--format", fmt, *options])


def run_native(tmp_path: Path, examples: Path, count: int, *options: str):
    """Traces the Cython example with `pyust run --native`; (result, trace, pid, out file)."""
    out_file = tmp_path / "written.txt"
    pid_file = tmp_path / "pid"
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM.format(examples=str(examples), pid_file=str(pid_file),
                                      out_file=str(out_file), count=count))
    trace = tmp_path / "trace"
    result = run_pyust(["run", "--native", "-o", str(trace), *options, "--", str(program)])
    assert result.returncode == 0, result.stderr
    return result, trace, int(pid_file.read_text()), out_file


@pytest.mark.needs("foo2")
def test_cflags_exclude_the_python_headers(examples):
    result = subprocess.run([PYTHON, "-m", "pyust", "cflags", "--cython"], capture_output=True,
                            text=True, timeout=60, env=child_env())
    assert result.returncode == 0, result.stderr
    include = subprocess.run([PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['include'])"], capture_output=True, text=True).stdout.strip()
    flags = result.stdout.split()
    assert flags[0] == "-finstrument-functions"
    assert f"-finstrument-functions-exclude-file-list={include},/usr/include" in flags
    assert "-g" not in flags  # DWARF would name C++ functions without their namespace
    # In the built module, the module's functions call the hook; no inline function of
    # Python.h does, neither an out-of-line copy nor one inlined into a module function.
    calls = instrumented(next(examples.glob("foo2*.so")))
    for name in ("__pyx_pw_4foo2_1outer", "__pyx_pf_4foo2_outer", "__pyx_f_4foo2_inner",
                 "helper_c"):
        assert calls.get(name) == 1, (name, calls)
    assert not [name for name, n in calls.items() if n and re.match(r"_?Py(?!Init_)|__Pyx", name)]
    # Nor Cython's runtime named like the module's functions: the code-object cache that
    # every traceback goes through, its function type, its metaclass.
    helpers = (r"__pyx_(_?find_code_object|_?insert_code_object|bisect|CyFunction|CommonTypes|"
               r"pymod_create)")
    assert not [name for name, n in calls.items() if n and re.match(helpers, name)]


def instrumented(binary: Path) -> dict:
    """Per function of binary: how many calls of __cyg_profile_func_enter it makes."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                          capture_output=True, text=True, check=True).stdout
    calls, function = {}, None
    for line in text.splitlines():
        match = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if match:
            function = match.group(1)
            calls.setdefault(function, 0)
        elif function and "call" in line and "<__cyg_profile_func_enter" in line:
            calls[function] += 1
    return calls


@pytest.mark.needs("foo2")
def test_python_cython_and_c_frames_in_one_stack(tmp_path, examples):
    result, trace, pid, out_file = run_native(tmp_path, examples, 5)
    assert result.stdout.split() == ["15"]
    assert out_file.read_text().split() == ["0", "1", "2", "3", "4"]

    # debug-info names the native events: lttng-ust records the function's address as `ip`.
    text = subprocess.run(["babeltrace2", "--debug-info", str(trace)], capture_output=True,
                          text=True, timeout=300, check=True).stdout
    mine = [line for line in text.splitlines() if f"vpid = {pid}," in line]
    entries = [line for line in mine if "lttng_ust_cyg_profile:func_entry" in line]
    exits = [line for line in mine if "lttng_ust_cyg_profile:func_exit" in line]
    assert len(entries) == len(exits) > 0
    assert sum('func = "helper_c+0"' in line for line in entries) == 5

    out = report(trace, pid, "folded")
    assert out.returncode == 0, out.stderr
    stacks = folded(out.stdout)
    assert CHAIN in stacks, out.stdout
    assert all(ns > 0 for stack, ns in stacks.items() if stack.startswith(CHAIN))
    assert not [stack for stack in stacks if re.search(r"__pyx_(pw|pf|f)_", stack)], out.stdout
    raw = report(trace, pid, "folded", "--raw-names")
    assert raw.returncode == 0, raw.stderr
    raw_stacks = folded(raw.stdout)
    assert RAW_CHAIN in raw_stacks, raw.stdout
    # The same time, named two ways.
    assert sum(raw_stacks.values()) == sum(stacks.values())

    # Durations nest: each frame of the chain lies within the one below it.
    out = report(trace, pid, "chrome")
    assert out.returncode == 0, out.stderr
    events = [e for e in json.loads(out.stdout)["traceEvents"] if e.get("ph") == "X"]
    names = CHAIN.split(";")
    by_name = {name: [e for e in events if e["name"] == name] for name in names}
    assert len(by_name["helper_c"]) == 5
    for inner_name, outer_name in zip(names[1:], names[:-1]):
        for inner in by_name[inner_name]:
            assert any(o["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= o["ts"] + o["dur"]
                       for o in by_name[outer_name]), (inner_name, outer_name)
    assert "discarded" not in out.stdout


def run_program(tmp_path: Path, examples: Path, module: str, call: str, *options: str):
    """Runs `import module; print(outer())` with outer() calling `call`, under
    `pyust run OPTIONS`; (its stdout, its folded report)."""
    program = tmp_path / "prog.py"
    pid_file = tmp_path / "pid"
    program.write_text(textwrap.dedent(f"""\
        import os, sys
        sys.path.insert(0, {str(examples)!r})
        import {module}
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        def outer():
            return {call}
        print(outer())
        """))
    trace = tmp_path / "trace"
    result = run_pyust(["run", *options, "-o", str(trace), "--", str(program)])
    assert result.returncode == 0, result.stderr
    out = report(trace, int(pid_file.read_text()), "folded")
    assert out.returncode == 0, out.stderr
    return result.stdout.strip(), folded(out.stdout)


@pytest.mark.needs("cext")
def test_plain_c_extension(tmp_path, examples):
    stdout, stacks = run_program(tmp_path, examples, "cext", "cext.square_sum(4)", "--native")
    assert stdout == "14"
    assert "__main__:<module>;__main__:outer;square_sum;square" in stacks, stacks


@pytest.mark.needs("cppext")
def test_cpp_extension_frames_read_as_cpp_names(tmp_path, examples):
    stdout, stacks = run_program(tmp_path, examples, "cppext", "cppext.total_norm(4)",
                                 "--native")
    assert stdout == "14.0"  # 0 + 1 + 4 + 9: norm() of (i, 0) squares i twice, roots once
    # The module's function (static, C++ linkage: PyObject is struct _object) calls the
    # namespace's function of the same bare name: two frames.
    assert ("__main__:<module>;__main__:outer;total_norm(_object*, _object*);"
            "geometry::total_norm(long);geometry::norm(geometry::Vec const&)") in stacks, stacks
    assert not [stack for stack in stacks if "_ZN" in stack], stacks


# A reference run: which of foo3's functions the interpreter hook pyust uses sees, when
# nothing else traces: sys.monitoring's PY_START from 3.12 on, sys.setprofile before.
PROFILED_NAMES = """\
import sys
sys.path.insert(0, sys.argv[1])
import foo3
seen = set()
if hasattr(sys, "monitoring"):
    events = sys.monitoring.events
    sys.monitoring.use_tool_id(4, "reference")
    sys.monitoring.register_callback(4, events.PY_START,
                                     lambda code, offset: seen.add(code.co_name))
    sys.monitoring.set_events(4, events.PY_START)
    foo3.outer(3)
    sys.monitoring.set_events(4, 0)
else:
    sys.setprofile(lambda frame, event, arg:
                   seen.add(frame.f_code.co_name) if event == "call" else None)
    foo3.outer(3)
    sys.setprofile(None)
print(" ".join(sorted(seen)))
"""


@pytest.mark.needs("foo3")
def test_profiled_cython_reaches_the_hook_as_python_frames(tmp_path, examples):
    # profile=True and CYTHON_TRACE: Python frames through pyust's hook, no --native needed,
    # where this Cython reports them to that hook: on Python 3.12+, Cython 3.0 reports to
    # sys.setprofile's functions only, 3.1 to sys.monitoring (which pyust uses there).
    reference = subprocess.run([PYTHON, "-c", PROFILED_NAMES, str(examples)], env=child_env(),
                               capture_output=True, text=True, timeout=60)
    assert reference.returncode == 0, reference.stderr
    if "outer" not in reference.stdout.split():
        pytest.skip("this Cython does not report profile=True functions to sys.monitoring (pyust's "
                    f"hook on this Python): a reference run saw only {reference.stdout.split()}")
    stdout, stacks = run_program(tmp_path, examples, "foo3", "foo3.outer(3)")
    assert stdout == "6"
    assert "__main__:<module>;__main__:outer;foo3:outer;foo3:inner" in stacks, stacks


@pytest.mark.needs("foo2")
def test_lost_native_events_leave_the_python_stack_right(tmp_path, examples):
    result, trace, pid, out_file = run_native(tmp_path, examples, 100000, "--modules", "__main__",
                                              "--subbuf-size", "4k", "--num-subbuf", "2")
    # (foo2 adds in a C int: the sum wraps around at 32 bits.)
    assert result.stdout.split() == [str(sum(range(1, 100001)) % 2**32)]
    match = re.search(r"(\d+) discarded by LTTng", result.stderr)
    assert match and int(match.group(1)) > 0, result.stderr
    assert "events were lost" in result.stderr

    out = report(trace, pid, "folded")
    assert out.returncode == 0, out.stderr
    stacks = folded(out.stdout)
    assert "__main__:<module>;__main__:outer" in stacks, out.stdout
    # Every native frame sits on the Python frames that called it, whatever was lost.
    for stack in stacks:
        if "foo2." in stack or "helper_c" in stack:
            assert stack.startswith("__main__:<module>;__main__:outer;") or \
                "PyInit_foo2" in stack or "foo2.<module>" in stack, stack
    assert "events discarded by the tracer" in out.stderr


@pytest.mark.needs("foo2")
def test_python_cython_c_and_the_write_system_call_in_one_stack(tmp_path, examples):
    """The full stack of seed 004: a Python function calls an instrumented
    Cython function that calls a C function that writes to a file; with
    --native --kernel, the write system call sits on top of the C frame."""
    if os.geteuid() != 0 or shutil.which("perf") is None:
        pytest.fail("this test needs root and perf (scripts/setup installs linux-perf)")
    # perf drops events when it writes out too slowly (a machine busy with disk I/O, as CI's
    # while it makes a Debian root) and pyust then says so: only then, record again.
    for attempt in range(3):
        (tmp_path / str(attempt)).mkdir()
        result, trace, pid, _ = run_native(tmp_path / str(attempt), examples, 5, "--kernel")
        if "perf lost" not in result.stderr:
            break
    out = report(trace, pid, "folded")
    assert out.returncode == 0, out.stderr
    stacks = folded(out.stdout)
    syscalls = {stack.rsplit(";", 1)[1] for stack in stacks if stack.startswith(CHAIN + ";")}
    assert "write" in syscalls, (result.stderr, [s for s in stacks if "foo2" in s])
    # The write lies within helper_c, within the Python frames (chrome durations).
    out = report(trace, pid, "chrome")
    events = [e for e in json.loads(out.stdout)["traceEvents"] if e.get("ph") == "X"]
    helpers = [e for e in events if e["name"] == "helper_c"]
    writes = [e for e in events if e["name"] == "write"]
    nested = [w for w in writes
              if any(h["ts"] <= w["ts"] and w["ts"] + w["dur"] <= h["ts"] + h["dur"]
                     for h in helpers)]
    assert len(nested) == 5  # one write(2) per helper_c call
