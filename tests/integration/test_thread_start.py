"""Threads that start while another thread's sys.setprofile() is under way, with the
`.pth` activation (`pyust enable`, PYUST=1) and `pyust run` together (issue 12): every
thread runs its target, as untraced.

Up to 3.11 pyust moved each new thread onto its hook with threading.setprofile(), so each
new thread called sys.setprofile(). CPython 3.11 guards that call with one process-wide
flag, and a Python audit hook (regrtest installs one) runs inside it: when the hook released
the GIL, a second thread starting then died before its target of "RuntimeError: Cannot
install a profile function while another profile function is being installed"
(test_threading's test_reinit_tls_after_fork, 3 runs in 4)."""

from __future__ import annotations

import subprocess

from pyusttest.environment import PYTHON, user_site_env
from pyusttest.run import run_plain, run_pyust
from pyusttest.traces import read_trace

PROGRAM = """\
import sys, threading, time

def audit(event, args):
    if event == "sys.setprofile":
        time.sleep(0.001)  # lets other threads run in the middle of setprofile()

sys.addaudithook(audit)
ran = []

def target(i):
    ran.append(i)

for _ in range(5):
    threads = [threading.Thread(target=target, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print(len(ran), sorted(set(ran)) == list(range(16)))
"""


def test_threads_start_during_setprofile_with_activation_and_run(tmp_path):
    program = tmp_path / "starts.py"
    program.write_text(PROGRAM)
    env, _ = user_site_env(tmp_path, PYUST="1")
    enabled = subprocess.run([PYTHON, "-m", "pyust", "enable"], capture_output=True,
                             text=True, env=env)
    assert enabled.returncode == 0, enabled.stderr
    plain = run_plain([str(program)], env={**env, "PYUST": ""})
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, "80 True\n", "")
    # The activated interpreter alone (PYUST=1), then `pyust run` under it.
    activated = run_plain([str(program)], env=env)
    assert (activated.returncode, activated.stdout) == (0, plain.stdout), activated.stderr
    assert "Error" not in activated.stderr, activated.stderr
    out = tmp_path / "trace"
    traced = run_pyust(["run", "-o", str(out), "--", str(program)], env=env)
    assert (traced.returncode, traced.stdout) == (0, plain.stdout), traced.stderr
    assert "Error" not in traced.stderr, traced.stderr
    # Every thread was traced from its start.
    calls = [e for e in read_trace(out, tmp_path).events
             if e["name"] == "python:call" and e["fields"]["name"] == "target"]
    assert len(calls) == 80
