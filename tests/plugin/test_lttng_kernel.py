"""pyust's reports of LTTng kernel-tracer events, on synthetic sessions.

This machine cannot load lttng-modules, so pyust's LTTng-kernel path (doc/kernel-and-native.md,
"Kernel: system calls and scheduling") never runs here for real; perf's path is
tested in tests/kernel. bt_plugin_pyust_lttng_kernel.py (source.pyustkernel.session)
builds the two traces of a session with a kernel channel instead: python:* in
one, LTTng's syscall_entry_write/syscall_exit_write and sched_switch in the
other, one clock. History (ns): <module> 1000, foo 2000, bar 3000; write from
4000 to 4700; switched out at 5000, back in at 8500 (by swapper's sched_switch);
bar returns at 9000, foo at 10000, <module> at 11000. Another process writes
from 3500 to 7000 on CPU 1. Real babeltrace2, every run under a timeout.

    /usr/bin/python3 -m pytest -q tests/plugin/test_lttng_kernel.py
"""

import json

import pytest
from test_golden import babeltrace2

PID, TID = 4242, 4243

# Our thread's stacks: self times add up to the 10000 ns from <module>'s call to its return.
OURS = [
    "__main__:<module> 2000",
    "__main__:<module>;__main__:foo 2000",
    "__main__:<module>;__main__:foo;__main__:bar 1800",
    "__main__:<module>;__main__:foo;__main__:bar;[off-cpu] 3500",
    "__main__:<module>;__main__:foo;__main__:bar;write 700",
]
# The other process's write, no Python under it (swapper's [off-cpu] lasts 0 ns: not shown).
OTHER = ["write 3500"]

VARIANTS = {
    "vpid": ['context="vpid"'],  # what pyust's kernel channel adds
    "pid": ['context="pid"'],  # `lttng add-context -k -t pid -t tid`
    "compat": ['syscall="compat_syscall"'],  # a 32-bit program on a 64-bit kernel
}


def session(variant, *sink_params):
    args = ["-c", "source.pyustkernel.session"]
    for param in VARIANTS[variant]:
        args += ["-p", param]
    args += ["-c", "sink.pyust.report"]
    for param in sink_params:
        args += ["-p", param]
    result = babeltrace2(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


# With two processes in the trace, each stack starts with its process's title.
@pytest.mark.parametrize("variant", VARIANTS)
def test_folded(variant):
    titled = ["pid %d (python3 app.py);%s" % (PID, line) for line in OURS]
    titled += ["pid 77 (logger);%s" % line for line in OTHER]
    assert session(variant, "format=folded").splitlines() == sorted(titled)


# LTTng records the switch back to a thread in the context of the task it replaces (here
# swapper, pid 0): selecting the program's process or thread must not drop it, or [off-cpu]
# would run on to the thread's next event (bar's return at 9000: 4000 ns, not 3500).
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("selection", ["pid=%d" % PID, "tid=%d" % TID])
def test_folded_selected(variant, selection):
    assert session(variant, "format=folded", selection).splitlines() == OURS


# A task whose only event is a switch to one of ours (swapper here; any process in a
# system-wide recording) is no thread of the report: its switch only ends our [off-cpu].
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_switching_task_is_no_thread(variant):
    tree = session(variant, "format=tree")
    assert "pid %d (python3 app.py) tid %d: 9 events" % (PID, TID) in tree
    assert "pid 77 (logger) tid 77: 2 events" in tree
    assert "pid 0 " not in tree


def test_a_system_call_whose_exit_was_lost_ends_at_the_threads_next_python_event():
    """lost_exit: a write of ours at 1500 has no exit (the tracer's buffer was full). foo's call
    at 2000 ends it, since no thread runs Python inside a system call: foo's stack stands on
    <module>, not on that write (as perf's lost exits left <module> on an rt_sigprocmask)."""
    result = babeltrace2("-c", "source.pyustkernel.session", "-p", "lost_exit=true",
                         "-c", "sink.pyust.report", "-p", "format=folded", "-p", "pid=%d" % PID)
    assert result.returncode == 0, result.stderr
    expected = ["__main__:<module> 1500", "__main__:<module>;write 500"] + OURS[1:]
    assert result.stdout.splitlines() == sorted(expected)


def spans(text):
    data = json.loads(text)
    return [e for e in data["traceEvents"] if e["ph"] == "X"]


def innermost_enclosing(span, candidates):
    """The shortest candidate whose interval holds span's (chrome's ts/dur are us)."""
    holding = [c for c in candidates if c is not span and c["ts"] <= span["ts"]
               and span["ts"] + span["dur"] <= c["ts"] + c["dur"]]
    return min(holding, key=lambda c: c["dur"]) if holding else None


@pytest.mark.parametrize("variant", VARIANTS)
def test_chrome_nests_kernel_frames_in_bar(variant):
    ours = [e for e in spans(session(variant, "format=chrome")) if e["pid"] == PID]
    assert all(e["tid"] == TID for e in ours)
    by_name = {}
    for span in ours:
        by_name.setdefault(span["name"], []).append(span)
    assert sorted(by_name) == ["[off-cpu]", "__main__:<module>", "__main__:bar",
                               "__main__:foo", "write"]
    assert all(len(found) == 1 for found in by_name.values())
    bar, write, off = by_name["__main__:bar"][0], by_name["write"][0], by_name["[off-cpu]"][0]
    # Times from the origin, the first event counted (<module>'s call at 1000 ns).
    assert (bar["ts"], bar["dur"], bar["cat"]) == (2.0, 6.0, "python")
    assert (write["ts"], write["dur"], write["cat"]) == (3.0, 0.7, "kernel")
    assert (off["ts"], off["dur"], off["cat"]) == (4.0, 3.5, "kernel")
    assert innermost_enclosing(write, ours) is bar
    assert innermost_enclosing(off, ours) is bar
    assert innermost_enclosing(bar, ours) is by_name["__main__:foo"][0]
