"""20 short `python -c` children of a program under `pyust run` (issue 7):
every child's exit status is what it is untraced, the trace is readable, and
each child is traced exactly when it inherits the activation variable (with
`pyust enable`'s .pth in its environment), else not at all. And 200 children
that subprocess forks and execs all exit 0."""

from __future__ import annotations

import subprocess

import pytest

from lttng_harness import PYTHON, assert_balanced, child_env, read_trace, user_site_env

PARENT = """\
import subprocess, sys
CHILD = '''
import os, sys
def child(i):
    return i % 4
print(os.getpid())
sys.exit(child({i}))
'''
statuses, pids = [], []
for i in range(20):
    done = subprocess.run([sys.executable, "-c", CHILD.format(i=i)], capture_output=True,
                          text=True)
    statuses.append(done.returncode)
    pids.append(done.stdout.strip())
print(statuses)
with open(sys.argv[1], "w") as f:
    f.write(" ".join(pids))
"""


@pytest.mark.parametrize("inherited", [False, True], ids=["not-inherited", "inherited"])
def test_twenty_python_c_children(tmp_path, inherited):
    program = tmp_path / "parent.py"
    program.write_text(PARENT)
    env = child_env()
    if inherited:
        # The user site directory stands in for the environment's site-packages
        # (as in test_cli.py): `pyust enable` writes the .pth there.
        env, _ = user_site_env(tmp_path, CHILDREN_TRACE="1")
        enabled = subprocess.run([PYTHON, "-m", "pyust", "enable", "CHILDREN_TRACE"],
                                 capture_output=True, text=True, env=env)
        assert enabled.returncode == 0, enabled.stderr
    plain = subprocess.run([PYTHON, program, tmp_path / "plain-pids"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert plain.stdout == str([i % 4 for i in range(20)]) + "\n", plain.stderr
    out = tmp_path / "trace"
    traced = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", out, "--", program,
                             tmp_path / "pids"], capture_output=True, text=True, env=env,
                            timeout=300)
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout), traced.stderr
    pids = {int(pid) for pid in (tmp_path / "pids").read_text().split()}
    assert len(pids) == 20
    trace = read_trace(out)
    by_pid = {}
    for event in trace.events:
        by_pid.setdefault(event["vpid"], []).append(event)
    traced_children = pids & set(by_pid)
    if not inherited:
        assert traced_children == set()
        return
    assert traced_children == pids
    for pid in pids:
        calls = [e for e in by_pid[pid] if e["name"] == "python:call"
                 and e["fields"]["name"] == "child"]
        assert len(calls) == 1, pid
        for events in trace.threads().values():
            if events[0]["vpid"] == pid:
                assert_balanced(trace, events, closed=False)


FORK_AND_EXEC = """\
import os, subprocess
# user= makes subprocess fork() and exec (from 3.10 it would use vfork, which runs no fork
# handler; 3.9 always forks): pyust's fork handlers run in each child, between fork and exec.
statuses = [subprocess.run(["true"], user=os.getuid()).returncode for _ in range(200)]
print(sorted(set(statuses)))
"""


def test_two_hundred_fork_and_exec_children(tmp_path):
    """subprocess closes every descriptor between fork and exec: the child must not start
    LTTng-UST's threads there (LTTng-UST aborts on a descriptor closed behind its back; on
    3.9 about one child in 20 died of SIGABRT)."""
    program = tmp_path / "spawner.py"
    program.write_text(FORK_AND_EXEC)
    traced = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", tmp_path / "trace", "--",
                             program], capture_output=True, text=True, env=child_env(),
                            timeout=300)
    assert (traced.returncode, traced.stdout) == (0, "[0]\n"), traced.stderr
    assert "Assertion" not in traced.stderr
