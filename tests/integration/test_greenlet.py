"""greenlet (Debian's python3-greenlet) under pyust (issue 7): a switch swaps the
thread's Python stack; pyust models it as the frames left returning and the
frames entered resuming, so every thread balances and no frame of one greenlet
is ever reported inside another's stack."""

from __future__ import annotations

import subprocess

import pytest

from pyusttest.environment import PYTHON
from pyusttest.run import run_hooked, run_pyust
from pyusttest.traces import assert_balanced

# ping and pong each run inner(), which switches to the other three times; the
# main greenlet starts ping from main() and gets ping's result when it ends.
# pong never ends: it stays suspended inside inner().
PINGPONG = """\
from greenlet import greenlet
def inner(name, n):
    for i in range(n):
        other[name].switch(i)
    return name
def ping(*_):
    return inner("ping", 3)
def pong(*_):
    return inner("pong", 3)
gping, gpong = greenlet(ping), greenlet(pong)
other = {"ping": gpong, "pong": gping}
def main():
    return gping.switch()
print(main(), gping.dead, gpong.dead)
"""
# Roots of each greenlet's stack: which frames may be open below a call of each.
STACK_BELOW = {"<module>": [], "main": ["<module>"], "ping": [], "pong": [],
               "inner": None}


def _needs_greenlet():
    if subprocess.run([PYTHON, "-c", "import greenlet"], capture_output=True).returncode:
        pytest.skip(f"greenlet is not installed for {PYTHON} (Debian: python3-greenlet)")


def _check_stacks(trace, program):
    """Every thread balances; each greenlet's frames sit on their own roots."""
    for events in trace.threads().values():
        assert_balanced(trace, events, closed=False)
    stack = []
    counts = {}
    for kind, name, *_ in trace.program_flow(program):
        if kind == "return":
            assert stack and stack[-1] == name, (name, stack)
            stack.pop()
            continue
        below = STACK_BELOW[name]
        if below is not None:
            assert stack == below, f"{name} called on top of {stack}"
        else:
            assert stack in (["ping"], ["pong"]), f"inner called on top of {stack}"
        stack.append(name)
        counts[name] = counts.get(name, 0) + 1
    assert stack == [], stack
    return counts


@pytest.mark.parametrize("flags", [[], ["--c-calls"]], ids=["calls", "c-calls"])
def test_greenlet_switches_are_modelled(session, make_program, flags):
    _needs_greenlet()
    program = make_program(PINGPONG)
    result = run_hooked([program], flags=flags)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ping True False\n"
    counts = _check_stacks(session.read(), program)
    # Resuming counts as a call, as for generators: ping starts once and
    # resumes three times; pong starts once and resumes twice.
    assert counts == {"<module>": 2, "main": 2, "ping": 4, "pong": 3, "inner": 7}


def test_greenlet_report_has_nothing_incomplete(make_program, tmp_path):
    """The analysis agrees: one tree per greenlet root, nothing incomplete."""
    _needs_greenlet()
    program = make_program(PINGPONG.replace("print(main()", "import os\nprint(os.getpid(), main()"))
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--", program])
    assert result.returncode == 0, result.stderr
    pid = result.stdout.split()[0]
    report = run_pyust(["report", str(out), "--pid", pid, "--format", "folded",
                        "--modules", "__main__", "--timeout", "60"])
    assert report.returncode == 0, report.stderr
    stacks = {line.rpartition(" ")[0] for line in report.stdout.splitlines()}
    assert {"__main__:ping;__main__:inner", "__main__:pong;__main__:inner",
            "__main__:<module>;__main__:main"} <= stacks, stacks
    assert not any("ping" in s and "pong" in s for s in stacks), stacks
    assert not any(s.startswith("__main__:<module>;__main__:main;") for s in stacks), stacks
    assert f"pid {pid} " not in report.stderr, report.stderr
