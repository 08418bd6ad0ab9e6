"""20 short `python -c` children of a program under `pyust run` (issue 7):
every child's exit status is what it is untraced, the trace is readable, and
each child is traced exactly when it inherits the activation variable (with
`pyust enable`'s .pth in its environment), else not at all. And 200 children
that subprocess forks and execs all exit 0."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pyusttest.environment import FAST, PYTHON, child_env, user_site_env
from pyusttest.traces import assert_balanced, read_trace

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


@pytest.mark.parametrize("inherited", [None, False, True],
                         ids=["no-children", "default", "enabled-pth"])
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
    no_children = ["--no-children"] if inherited is None else []
    traced = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", out, *no_children, "--",
                             program, tmp_path / "pids"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout), traced.stderr
    pids = {int(pid) for pid in (tmp_path / "pids").read_text().split()}
    assert len(pids) == 20
    trace = read_trace(out)
    by_pid = {}
    for event in trace.events:
        by_pid.setdefault(event["vpid"], []).append(event)
    traced_children = pids & set(by_pid)
    if inherited is None:
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


PREEXEC = """\
    import os, subprocess, sys

    def in_preexec():
        os.environ["SEEN"] = "yes"

    def spawn():
        done = subprocess.run(
            [sys.executable, "-c",
             "import os\\ndef child():\\n    print(os.getpid(), os.environ['SEEN'])\\nchild()"],
            preexec_fn=in_preexec, capture_output=True, text=True, check=True)
        print("child", done.stdout.strip(), flush=True)

    print("program", os.getpid(), flush=True)
    spawn()
"""


def test_a_preexec_fn_child_starts_its_own_stack(tmp_path):
    """subprocess with a preexec_fn forks through Python's fork hooks and runs Python code
    in the child before the exec. LTTng-UST is not restarted there (a round trip to the
    session daemon for a few calls; 3 s when it does not answer), and nothing of the child
    reaches the trace before the exec: the program exec'd, traced as a child, starts a stack
    of its own instead of one inside the parent's frames, and the parent's trace holds
    nothing of the child's."""
    done, out, _ = _run(tmp_path, PREEXEC)
    assert done.returncode == 0, done.stderr
    pids = _pids(done.stdout)
    child = int(done.stdout.split("child ")[1].split()[0])
    assert done.stdout.endswith(" yes\n")  # the preexec_fn ran
    trace = read_trace(out)
    assert set(trace.pids()) == {pids["program"], child}
    assert "in_preexec" not in _called(trace, pids["program"]) | _called(trace, child)
    (events,) = [events for (pid, _), events in trace.threads().items()
                 if pid == child and trace.flow(events)]
    flow = trace.flow(events)
    assert ("call", "child") in flow and ("call", "spawn") not in flow, flow
    assert_balanced(trace, events)
    for (pid, _), events in trace.threads().items():
        if pid == pids["program"]:
            assert_balanced(trace, events)


# ------------------------------------------------------------ kinds of children

def _run(tmp_path, program: str, *options, env=None, args=()):
    """`pyust run` of program (source) with a private TMPDIR; (completed, trace dir, tmpdir)."""
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(program))
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    out = tmp_path / "trace"
    env = dict(env or child_env())
    env["TMPDIR"] = str(tmpdir)
    if FAST and "--fast" not in options:
        options = ("--fast", *options)  # the children record batches too
    done = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", out, *options, "--", path,
                           *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    return done, out, tmpdir


def _called(trace, pid) -> set:
    """Names of the functions the process pid called."""
    return {e["fields"]["name"] for e in trace.events
            if e["vpid"] == pid and e["name"] == "python:call"}


def _pids(text: str) -> dict:
    """{label: pid} from the program's `label pid` lines."""
    return {line.split()[0]: int(line.split()[1]) for line in text.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit()}


KINDS = """\
    import multiprocessing, os, subprocess, sys, textwrap
    import work

    GRANDCHILD = "import os\\ndef grandchild():\\n    print('grandchild', os.getpid())\\ngrandchild()\\n"
    CHILD = textwrap.dedent('''
        import os, subprocess, sys
        def child():
            print('child', os.getpid(), flush=True)
            subprocess.run([sys.executable, '-c', %r], check=True)
        child()
    ''') % GRANDCHILD

    if __name__ == "__main__":
        print("program", os.getpid(), flush=True)
        subprocess.run([sys.executable, "-c", CHILD], check=True)
        for method in ("spawn", "forkserver"):
            with multiprocessing.get_context(method).Pool(1) as pool:
                print(method, pool.apply(work.in_worker), flush=True)
                # Leaving the block terminates the worker (SIGTERM): in the fast mode
                # its last 20 ms of records would be lost (doc/fast-mode-and-dormant.md).
                pool.close()
                pool.join()
"""

WORK = """\
import os

def in_worker():
    return os.getpid()
"""


def test_each_kind_of_python_child_is_traced(tmp_path):
    """A subprocess child running sys.executable, its own child (a grandchild), a
    multiprocessing spawn worker and a forkserver worker (forked by the server,
    a Python child itself): each records its own calls under its own pid."""
    (tmp_path / "work.py").write_text(WORK)
    done, out, _ = _run(tmp_path, KINDS, "--modules", "__main__,__mp_main__,work")
    assert done.returncode == 0, done.stderr
    pids = _pids(done.stdout)
    assert set(pids) == {"program", "child", "grandchild", "spawn", "forkserver"}, done.stdout
    assert len(set(pids.values())) == 5
    trace = read_trace(out)
    expected = {"program": "<module>", "child": "child", "grandchild": "grandchild",
                "spawn": "in_worker", "forkserver": "in_worker"}
    for label, function in expected.items():
        assert function in _called(trace, pids[label]), label


OPTIONS_PARENT = """\
    import os, subprocess, sys
    CHILD = "import json, os\\ndef child():\\n    return json.dumps([1])\\nchild()\\nprint(os.getpid())\\n"
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    print("child", done.stdout.strip())
"""


@pytest.mark.skipif(FAST, reason="reads the fast mode's batches itself")
@pytest.mark.parametrize("fast", [False, True], ids=["standard", "fast"])
def test_children_trace_with_the_runs_options(tmp_path, fast):
    """--lines --c-calls --modules reach the children (their python:process event says
    lines and c_calls, json's functions are filtered out, lines and C calls are recorded),
    and --fast too (the child records batches, no call events)."""
    options = ["--lines", "--c-calls", "--modules", "__main__"] + (["--fast"] if fast else [])
    done, out, _ = _run(tmp_path, OPTIONS_PARENT, *options)
    assert done.returncode == 0, done.stderr
    pid = _pids(done.stdout)["child"]
    raw = [e for e in read_trace(out, expand=False).events if e["vpid"] == pid]
    names = {e["name"] for e in raw}
    process = [e["fields"] for e in raw if e["name"] == "python:process"]
    assert process and process[0]["lines"] == 1 and process[0]["c_calls"] == 1
    if fast:
        assert "python:batch" in names and "python:call" not in names, names
        return
    assert {"python:line", "python:c_call"} <= names, names
    codes = {e["fields"]["id"]: e["fields"]["module"] for e in raw if e["name"] == "python:code"}
    called = [codes.get(e["fields"]["id"]) for e in raw if e["name"] == "python:call"]
    assert "__main__" in called and "json" not in called and "json.encoder" not in called


SUMMARY = """\
    import subprocess, sys
    CHILD = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass'])"
    subprocess.run([sys.executable, "-c", CHILD])
"""


def test_summary_counts_processes_and_nothing_is_left(tmp_path):
    """The program, its child and grandchild: '3 processes traced' at the end of the summary
    (with --no-count too); the private directory is gone afterwards; with --no-children, the
    program alone. One wording with every option (--no-count, --no-children changed it)."""
    done, _, tmpdir = _run(tmp_path, SUMMARY)
    assert done.returncode == 0, done.stderr
    assert re.search(r": \d+ events recorded, 0 discarded by LTTng; 3 processes traced, \S+'s processes only\n\Z",
                     done.stderr), done.stderr
    assert list(tmpdir.iterdir()) == []
    (tmp_path / "second").mkdir()
    alone, _, _ = _run(tmp_path / "second", SUMMARY, "--no-children")
    assert alone.returncode == 0, alone.stderr
    assert re.search(r": \d+ events recorded, 0 discarded by LTTng; 1 process traced, "
                     r"\S+'s processes only\n\Z", alone.stderr), alone.stderr
    (tmp_path / "third").mkdir()
    uncounted, _, _ = _run(tmp_path / "third", SUMMARY, "--no-count")
    assert uncounted.returncode == 0, uncounted.stderr
    assert re.search(r": events not counted \(--no-count\), 0 discarded by LTTng; 3 processes "
                     r"traced, \S+'s processes only\n\Z", uncounted.stderr), uncounted.stderr


UNTRACED_CHILDREN = """\
    import os, subprocess, sys
    SHOW = "import os, sys; print(os.getpid(), 'pyust' in sys.modules, sorted(sys.modules), sys.path)"
    def show(label, argv, **kwargs):
        done = subprocess.run(argv + ["-c", SHOW], capture_output=True, text=True, **kwargs)
        print(label, done.returncode, repr(done.stderr), done.stdout.strip())
    show("isolated", [sys.executable, "-I"])
    show("ignore-env", [sys.executable, "-E"])
    show("own-pythonpath", [sys.executable],
         env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.abspath(__file__))})
    show("own-env", [sys.executable], env={"PATH": os.environ["PATH"]})
"""


def test_children_that_are_not_traced_run_unchanged(tmp_path):
    """-I and -E children (they ignore PYTHONPATH), a child whose PYTHONPATH the program
    sets, and one with an environment of the program's own: untraced, and they see what
    they see when the program runs untraced."""
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(UNTRACED_CHILDREN))
    plain = subprocess.run([PYTHON, path], capture_output=True, text=True, env=child_env(),
                           timeout=120)
    done, out, _ = _run(tmp_path, UNTRACED_CHILDREN)
    assert done.returncode == 0, done.stderr
    trace_pids = {e["vpid"] for e in read_trace(out).events}
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    plain_lines = dict(line.split(" ", 1) for line in plain.stdout.splitlines())
    assert set(lines) == {"isolated", "ignore-env", "own-pythonpath", "own-env"}
    for label, line in lines.items():
        status, stderr, pid, rest = line.split(" ", 3)
        assert (status, stderr) == ("0", "''"), line
        assert int(pid) not in trace_pids, label
        assert rest == plain_lines[label].split(" ", 3)[3], label


def _other_pythons():
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except OSError:
        return []
    ours = subprocess.run([PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True).stdout.strip()
    found = []
    for version in ("2.7", "3.9", "3.10", "3.12", "3.13"):
        if version == ours:
            continue
        candidates = sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin",
                                                   "python" + version)))
        if candidates:
            found.append(candidates[-1])
    return found


OTHER = """\
    import os, subprocess, sys
    SHOW = ("import os, sys; print(os.getpid()); "
            "print(sorted(m for m in sys.modules if m != 'sitecustomize')); print(sys.path)")
    for python in sys.argv[1:]:
        done = subprocess.run([python, "-c", SHOW], capture_output=True, text=True)
        print(python, done.returncode, repr(done.stderr), repr(done.stdout))
"""


def test_child_of_another_interpreter_runs_untraced_and_unchanged(tmp_path):
    """A child that is another Python version (pyenv's) cannot load pyust's native hook:
    it runs untraced, silently, with the modules and sys.path it has when the program
    runs untraced (bar a `sitecustomize` entry when it has none of its own)."""
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no other Python version (pyenv) on this machine")
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(OTHER))
    plain = subprocess.run([PYTHON, path, *pythons], capture_output=True, text=True,
                           env=child_env(), timeout=120)
    done, out, _ = _run(tmp_path, OTHER, args=pythons)
    assert done.returncode == 0, done.stderr
    trace_pids = {e["vpid"] for e in read_trace(out).events}
    traced = [line.split(" ", 3) for line in done.stdout.splitlines()]
    untraced = [line.split(" ", 3) for line in plain.stdout.splitlines()]
    assert len(traced) == len(pythons)
    for (python, status, stderr, stdout), plain_line in zip(traced, untraced):
        assert (status, stderr) == ("0", "''"), python
        pid, rest = eval(stdout).split("\n", 1)
        assert int(pid) not in trace_pids, python
        assert rest == eval(plain_line[3]).split("\n", 1)[1], python


WAITS = """\
    import os, sys, time
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.05)
"""


def test_other_processes_on_the_machine_are_untouched(tmp_path):
    """While a program runs under `pyust run`, a Python started beside it (not its
    descendant) sees no PYUST, no private directory, and is not traced."""
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(WAITS))
    env = child_env()
    env["TMPDIR"] = str(tmp_path)
    run = subprocess.Popen([PYTHON, "-m", "pyust", "run", "-o", tmp_path / "trace", "--", path,
                            tmp_path / "go"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            if any(p.name.startswith("pyust-children-") for p in tmp_path.iterdir()):
                break
            time.sleep(0.05)
        else:
            pytest.fail("pyust run made no private directory")
        beside = subprocess.run([PYTHON, "-c", "import os, sys\ndef beside():\n    pass\nbeside()\n"
                                 "print(os.getpid(), 'pyust' in sys.modules, "
                                 "os.environ.get('PYUST'), [p for p in sys.path if "
                                 "'pyust-children-' in p or p.endswith('_children')])"],
                                capture_output=True, text=True, env=child_env(), timeout=60)
    finally:
        (tmp_path / "go").touch()
        _, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stderr
    pid, rest = beside.stdout.split(" ", 1)
    assert rest == "False None []\n"
    assert int(pid) not in {e["vpid"] for e in read_trace(tmp_path / "trace").events}


def test_the_interpreters_own_sitecustomize_still_runs(tmp_path):
    """The private sitecustomize chains to the one further along sys.path: the
    interpreter's (Debian's /usr/lib/python3.X/sitecustomize.py) or, here, a user's own on
    PYTHONPATH, which still runs once in a traced child."""
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import sys\nsys.own_sitecustomize_ran = "
                                          "getattr(sys, 'own_sitecustomize_ran', 0) + 1\n")
    env = child_env()
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}{os.pathsep}{own}"
    program = """\
        import subprocess, sys
        SHOW = ("import sys; print(getattr(sys, 'own_sitecustomize_ran', 0), "
                "sys.modules['sitecustomize'].__file__, 'pyust' in sys.modules and "
                "sys.modules['pyust'].is_active())")
        print(subprocess.run([sys.executable, "-c", SHOW], capture_output=True,
                             text=True).stdout.strip())
    """
    done, _, _ = _run(tmp_path, program, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"1 {own / 'sitecustomize.py'} True\n"


ENABLED_PARENT = """\
    import subprocess, sys
    CHILD = "import os\\ndef child():\\n    return 1\\nchild()\\nprint(os.getpid())\\n"
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    print("child", done.stdout.strip())
"""


def test_the_runs_options_win_over_an_enabled_pth(tmp_path):
    """With `pyust enable MY_TRACE`'s .pth and MY_TRACE=1 in the environment, `pyust run
    --lines` traces the program and its child with --lines: the .pth starts the child with
    its options first, the run's sitecustomize restarts it with the run's."""
    env, _ = user_site_env(tmp_path, MY_TRACE="1")
    enabled = subprocess.run([PYTHON, "-m", "pyust", "enable", "MY_TRACE"],
                             capture_output=True, text=True, env=env)
    assert enabled.returncode == 0, enabled.stderr
    done, out, _ = _run(tmp_path, ENABLED_PARENT, "--lines", env=env)
    assert done.returncode == 0, done.stderr
    pid = _pids(done.stdout)["child"]
    trace = read_trace(out)
    process = [e["fields"]["lines"] for e in trace.events
               if e["vpid"] == pid and e["name"] == "python:process"]
    assert process and process[-1] == 1, process
    assert any(e["vpid"] == pid and e["name"] == "python:line" for e in trace.events)
    assert "child" in _called(trace, pid)


def has_cpython_tests() -> bool:
    """Whether the interpreter under test has CPython's own tests (pyenv's builds do;
    Debian's come in libpython3.X-testsuite, which scripts/setup installs)."""
    return subprocess.run([PYTHON, "-c", "import test.test_bisect, test.test_colorsys"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not has_cpython_tests(),
                    reason="CPython's tests are not installed for the interpreter under test "
                           "(Debian: libpython3.X-testsuite)")
def test_regrtest_workers_are_traced(tmp_path):
    """`python -m test -j2`'s workers (fresh interpreters, one per test file) record the
    tests they run, each under its own pid."""
    out = tmp_path / "trace"
    fast = ["--fast"] if FAST else []
    done = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", out, *fast, "--modules",
                           "test.test_bisect,test.test_colorsys", "--", "-m", "test", "-j2",
                           "test_bisect", "test_colorsys"], capture_output=True, text=True,
                          env=child_env(), timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "; 3 processes traced" in done.stderr, done.stderr
    trace = read_trace(out)
    by_module = {}
    for e in trace.events:
        if e["name"] == "python:code" and e["fields"]["module"] in ("test.test_bisect",
                                                                    "test.test_colorsys"):
            by_module.setdefault(e["fields"]["module"], set()).add(e["vpid"])
    assert set(by_module) == {"test.test_bisect", "test.test_colorsys"}
    # Another user's run of the same tests could share the session: ours are distinct pids.
    assert all(by_module.values())
    assert by_module["test.test_bisect"] != by_module["test.test_colorsys"]


# Leaves a process behind that starts Python once told to (after the run), with the
# environment the program had; writes what pyust put in that environment.
LEAVES_A_LATE_CHILD = """\
    import json, os, subprocess, sys
    go, result, environment = sys.argv[1:]
    with open(environment, "w") as f:
        json.dump({k: v for k, v in os.environ.items() if k == "PYTHONPATH" or "PYUST" in k}, f)
    WAIT = 'while [ ! -e "$1" ]; do sleep 0.05; done; exec "$2" -c "$4" >"$3" 2>&1'
    LATE = "import sys; print('late', 'pyust' in sys.modules)"
    subprocess.Popen(["sh", "-c", WAIT, "late", go, sys.executable, result, LATE],
                     start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""

# The other user's code, for every directory named in the late child's environment: it
# makes each one it can (pyust removed them) with a sitecustomize that leaves a mark
# (named after the uid that ran it) in the shared directory.
PLANTS = """\
import json, os, sys
shared, paths = sys.argv[1], json.loads(sys.argv[2])
for path in paths:
    try:
        os.mkdir(path)
    except OSError:
        continue
    os.chmod(path, 0o777)
    with open(os.path.join(path, "sitecustomize.py"), "w") as f:
        f.write("import os\\nopen(os.path.join(%r, 'ran-as-%%d' %% os.getuid()), 'w').close()\\n"
                % shared)
    print(path)
"""


def test_a_late_child_runs_nothing_another_user_planted(tmp_path, local_user):
    """Issue 26: a process the program leaves behind starts Python after pyust run ended.
    Its PYTHONPATH named pyust's private directory in /tmp, which pyust had removed:
    another user made it again with a sitecustomize.py, and the late child (root's) ran
    it. Now nothing pyust puts in a child's environment can be made again by another
    user: the sitecustomize is in pyust's installed package, and the run's private
    directories, made again by the user, are left as the user made them; the late child,
    whose run is over, starts untraced."""
    shared = Path(tempfile.mkdtemp(prefix="pyust-sticky-", dir="/tmp"))
    try:
        shared.chmod(0o1777)  # /tmp's kind, of the test's own
        go, result, environment = tmp_path / "go", tmp_path / "result", tmp_path / "env"
        env = child_env()
        env["TMPDIR"] = str(shared)
        path = tmp_path / "program.py"
        path.write_text(textwrap.dedent(LEAVES_A_LATE_CHILD))
        try:
            done = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", tmp_path / "trace", "--",
                                   path, go, result, environment], capture_output=True,
                                  text=True, env=env, timeout=120)
            assert done.returncode == 0, done.stderr
            given = json.loads(environment.read_text())
            paths = [p for value in given.values() for p in value.split(os.pathsep)
                     if os.path.isabs(p)]
            assert paths, given
            planted = local_user.run(PYTHON, "-c", PLANTS, shared, json.dumps(paths))
            assert planted.returncode == 0, planted.stderr
        finally:
            go.touch()  # the late child starts now
        for _ in range(600):
            if result.exists() and result.read_text():
                break
            time.sleep(0.05)
        # Untraced: its run is over (it would wait PYUST_START_TIMEOUT for no session).
        assert result.read_text() == "late False\n"
        assert sorted(p.name for p in shared.iterdir() if p.name.startswith("ran-as-")) == []
        for made in planted.stdout.split():
            assert os.listdir(made) == ["sitecustomize.py"], made
    finally:
        shutil.rmtree(shared, ignore_errors=True)


# A Python child that runs as another user (the run records its own user's processes only).
AS_ANOTHER_USER = """\
    import subprocess, sys
    command = ["setpriv", "--reuid=" + sys.argv[1], "--regid=" + sys.argv[2], "--clear-groups",
               sys.executable, "-c", "import sys; print('other user', 'pyust' in sys.modules)"]
    print(subprocess.run(command, capture_output=True, text=True, check=True).stdout, end="")
"""


def test_a_child_of_another_user_starts_untraced(tmp_path, local_user):
    """A Python child that the program starts as another user is left untraced: the run's
    session records its own user's processes only, so the child's hook would wait
    PYUST_START_TIMEOUT for a session that never records it, then say it lost its start."""
    done, _, _ = _run(tmp_path, AS_ANOTHER_USER, args=(local_user.uid, local_user.gid))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "other user False\n", done.stderr
    assert "before the session recorded it" not in done.stderr, done.stderr
    assert "not in the trace" not in done.stderr, done.stderr
