"""`python -m pyust run|enable|disable` and the errors a user can make."""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, PYUST_PATH, child_env
from pyusttest.run import default_sigint, run_plain, run_pyust
from pyusttest.sessions import (SETUP_BY_COMMANDS, lttng, lttng_held_at_setup, session_names,
                                unique_name, wait_held)
from pyusttest.traces import read_trace

SIMPLE = "def f():\n    return 1\nfor _ in range(10):\n    f()\nprint('done')\n"


def _no_session_left(name_prefix: str):
    assert not [n for n in session_names() if n.startswith(name_prefix)]


def test_run_traces_and_summarises(make_program, tmp_path):
    program = make_program(SIMPLE)
    out = tmp_path / "trace"
    name = unique_name("run")
    result = run_pyust(["run", "--name", name, "-o", str(out), "--", program, "x"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    summary = result.stderr.strip().splitlines()[-1]
    match = re.fullmatch(r"pyust: trace in (\S+): (\d+) events recorded, (\d+) discarded by LTTng"
                         r"; 1 process traced, (\S+)'s processes only",
                         summary)
    assert match, summary
    assert match.group(1) == str(out)
    assert match.group(4) == pwd.getpwuid(os.getuid()).pw_name
    trace = read_trace(out)
    assert int(match.group(2)) == len(trace.events)
    trace = read_trace(out, tmp_path)
    assert int(match.group(3)) == 0
    calls = [e for e in trace.of("python:call") if e["fields"]["name"] == "f"]
    assert len(calls) == 10
    # The contexts `pyust run` adds: the thread's ids on every event; the program's name once,
    # on python:process, not as a procname context on each.
    assert all(e["vpid"] and e["vtid"] and e["procname"] is None for e in trace.events)
    process, = trace.of("python:process")
    assert process["fields"]["command"].endswith(f"{program} x")
    _no_session_left(name)


def test_default_output_is_named_with_one_date(make_program, tmp_path):
    """Without -o, the trace goes where lttng puts it, $LTTNG_HOME/lttng-traces, named
    pyust-PID-DATE-TIME, or NAME-DATE-TIME for --name NAME (it was
    pyust-PID-DATE-TIME-DATE-TIME: lttng added a date to pyust's name)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: a user's LTTNG_HOME would move the session daemon too")
    program = make_program(SIMPLE)
    env = child_env(LTTNG_HOME=str(tmp_path))
    name = unique_name("dated")
    for args, pattern in (([], r"pyust-\d+"), (["--name", name], re.escape(name))):
        result = run_pyust(["run", *args, "--", program], env=env)
        assert result.returncode == 0, result.stderr
        trace, = (tmp_path / "lttng-traces").iterdir()
        assert re.fullmatch(pattern + r"-\d{8}-\d{6}", trace.name)
        assert f"pyust: trace in {trace}: " in result.stderr
        assert [e for e in read_trace(trace).of("python:call") if e["fields"]["name"] == "f"]
        shutil.rmtree(trace)


def test_run_passes_exit_status_and_options(make_program, tmp_path):
    program = make_program("import sys\nlen('x')\nsys.exit(7)\n")
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--c-calls", "--", program])
    assert result.returncode == 7
    trace = read_trace(out)
    assert any(e["fields"]["name"] == "len" for e in trace.of("python:c_call"))


def test_run_module_target(tmp_path):
    (tmp_path / "mod.py").write_text("def g():\n    pass\ng()\n")
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--", "-m", "mod"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert any(e["fields"]["name"] == "g" for e in read_trace(out).of("python:call"))


def test_run_code_with_python_options(tmp_path):
    """`pyust run -- -X dev -c CODE args` runs as `python3 -X dev -c CODE args` does (it
    said "can't open file '-X'")."""
    code = "import sys\ndef f():\n    return sys.flags.dev_mode\nprint(f(), sys.argv)\n"
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--", "-X", "dev", "-c", code, "a"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "True ['-c', 'a']\n"
    assert any(e["fields"]["name"] == "f" for e in read_trace(out).of("python:call"))


def test_run_killed_by_a_signal_dies_the_same_way(make_program, tmp_path):
    program = make_program("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    name = unique_name("sig")
    result = run_pyust(["run", "--name", name, "-o", str(tmp_path / "t"), "--", program])
    assert result.returncode == -signal.SIGTERM
    assert run_plain([program]).returncode == -signal.SIGTERM
    _no_session_left(name)


def test_run_os_exit_leaves_no_session(make_program, tmp_path):
    program = make_program("import os\ndef f():\n    os._exit(4)\nf()\n")
    name = unique_name("exit")
    out = tmp_path / "t"
    result = run_pyust(["run", "--name", name, "-o", str(out), "--", program])
    assert result.returncode == 4
    assert any(e["fields"]["name"] == "f" for e in read_trace(out).of("python:call"))
    _no_session_left(name)


@contextlib.contextmanager
def run_as_from_a_terminal(name: str, out, program: str, env=None, options=()):
    """`pyust run [options]` in a process group of its own, as a shell starts it, so that
    a test can send it the terminal's Ctrl-C (SIGINT to the group). Killed, and its
    session destroyed, however the test ends."""
    child = subprocess.Popen([PYTHON, "-m", "pyust", "run", "--name", name, "-o", str(out),
                              *options, "--", program], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env or child_env(),
                             start_new_session=True, preexec_fn=default_sigint)
    try:
        yield child
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        lttng("destroy", name, check=False)


def test_ctrl_c_while_running_cleans_up(make_program, tmp_path):
    program = make_program("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    name = unique_name("int")
    with run_as_from_a_terminal(name, tmp_path / "t", program) as child:
        assert child.stdout.readline() == "ready\n"
        os.killpg(child.pid, signal.SIGINT)  # what the terminal's Ctrl-C does
        child.wait(timeout=60)
        _no_session_left(name)
    assert child.returncode == -signal.SIGINT
    assert "KeyboardInterrupt" in child.stderr.read()


@pytest.mark.parametrize("args, status, message", [
    (["run", "--bogus", "--", "x.py"], 2, "unrecognized arguments: --bogus"),
    (["run"], 2, "no program to run"),
    (["--bogus-hook-option", "--", "x.py"], 2, "unrecognized arguments"),
    (["--", "-X", "dev", "x.py"], 2, "python's options go before -m pyust"),
    (["run", "--num-subbuf", "1", "--", "x.py"], 2, "--num-subbuf must be at least 2"),
    (["enable", "BAD-NAME"], 1, "is not an environment variable name"),
])
def test_user_errors_are_one_line(args, status, message):
    result = run_pyust(args)
    assert result.returncode == status
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pyust: error: ")
    assert message in lines[0]


def test_a_refused_run_leaves_no_output_directory(tmp_path):
    out = tmp_path / "never"
    result = run_pyust(["run", "-o", str(out), "--", str(tmp_path / "missing.py")])
    assert result.returncode == 2
    assert not out.exists()


def test_output_directory_must_be_empty(make_program, tmp_path):
    out = tmp_path / "full"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    result = run_pyust(["run", "-o", str(out), "--", make_program(SIMPLE)])
    assert result.returncode == 2
    assert "is not empty" in result.stderr
    assert (out / "keep.txt").read_text() == "precious"


def test_output_directory_is_private_and_never_a_link(make_program, tmp_path):
    program = make_program(SIMPLE)
    out = tmp_path / "deep" / "trace"
    assert run_pyust(["run", "-o", str(out), "--", program]).returncode == 0
    assert (out.stat().st_mode & 0o777) == 0o700
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    result = run_pyust(["run", "-o", str(link), "--", program])
    assert result.returncode == 2
    assert "is a symbolic link" in result.stderr
    assert list(target.iterdir()) == []


@pytest.fixture
def sticky_dir():
    """A directory like /tmp, of the test's own: every user may create in it, and the
    sticky bit keeps them from removing or renaming what is not theirs."""
    path = Path(tempfile.mkdtemp(prefix="pyust-sticky-", dir="/tmp"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _refused(args: list, reason: str) -> None:
    result = run_pyust(args)
    lines = result.stderr.strip().splitlines()
    assert (result.returncode, len(lines)) == (2, 1), result.stderr
    assert lines[0].startswith("pyust: error: ") and reason in lines[0], result.stderr


def test_output_directory_another_user_can_change_is_refused(make_program, local_user,
                                                              sticky_dir):
    """Issue 26: another user's empty world-writable directory, given to root's pyust run as
    -o or --shm-path, was taken (the user could plant links in it that root's consumer daemon
    followed); and so was a directory under another user's. Now each is refused with one line
    saying whose it is, and the run writes nothing. Under a sticky parent (/tmp's kind), a
    directory of the caller's own is taken."""
    program = make_program(SIMPLE)
    planted, owned = sticky_dir / "planted", sticky_dir / "owned"
    made = local_user.python(f"import os\nos.mkdir({str(planted)!r})\nos.chmod({str(planted)!r}, "
                             f"0o777)\nos.mkdir({str(owned)!r}, 0o700)\n")
    assert made.returncode == 0, made.stderr
    who = f"belongs to user {local_user.name} (uid {local_user.uid})"
    _refused(["run", "-o", str(planted), "--", program], who)
    _refused(["run", "--shm-path", str(planted), "--", program], who)
    _refused(["run", "-o", str(owned), "--", program], who)
    _refused(["run", "-o", str(owned / "trace"), "--", program], f"{owned} {who}")
    assert list(planted.iterdir()) == []
    mine = sticky_dir / "mine" / "trace"
    result = run_pyust(["run", "-o", str(mine), "--", program])
    assert result.returncode == 0, result.stderr
    assert (mine.parent.stat().st_uid, mine.stat().st_uid) == (os.geteuid(), os.geteuid())
    assert read_trace(mine).of("python:call")


def test_output_directory_writable_by_others_is_refused(make_program, tmp_path, sticky_dir):
    """The caller's own directories that others may write to: the output directory
    group-writable, or world-writable even with the sticky bit (others could create the
    names the trace takes); a parent group- or world-writable without the sticky bit (its
    entries could be swapped). Each is refused with one line; a sticky parent is fine."""
    program = make_program(SIMPLE)
    group = tmp_path / "group"
    group.mkdir()
    group.chmod(0o770)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    _refused(["run", "-o", str(group), "--", program], "is writable by its group (mode 0770)")
    _refused(["run", "-o", str(group / "trace"), "--", program],
             f"{group} is writable by its group (mode 0770) without the sticky bit")
    _refused(["run", "-o", str(shared / "trace"), "--", program],
             f"{shared} is writable by every user (mode 0777) without the sticky bit")
    _refused(["run", "-o", str(sticky_dir), "--", program],
             "is writable by every user (mode 1777)")
    _refused(["run", "--shm-path", str(group), "--", program], "is writable by its group")
    assert not (group / "trace").exists() and not (shared / "trace").exists()


def test_session_name_taken(make_program, tmp_path):
    name = unique_name("taken")
    lttng("create", name, "--output", str(tmp_path / "other"))
    try:
        result = run_pyust(["run", "--name", name, "--", make_program(SIMPLE)])
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [
            result.stderr.strip().splitlines()[0]]
        assert "cannot create session" in result.stderr
        assert name in session_names()  # the user's session is untouched
    finally:
        lttng("destroy", name, check=False)


def test_lttng_missing(make_program, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = child_env(PATH=str(empty))
    result = run_pyust(["run", "--", make_program(SIMPLE)], env=env)
    assert result.returncode == 1
    assert result.stderr.strip() == "pyust: error: lttng is not installed: apt-get install lttng-tools"


def test_run_sets_its_session_up_without_an_lttng_process(make_program, tmp_path):
    """The usual `pyust run -o DIR` asks liblttng-ctl for all it needs (each `lttng`
    process is about 10 ms of its start-up): a wrapper in front of the real lttng
    notes every call, and sees none."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("lttng")
    calls = tmp_path / "calls"
    (bin_dir / "lttng").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {real} "$@"\n')
    (bin_dir / "lttng").chmod(0o755)
    env = child_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = run_pyust(["run", "-o", str(tmp_path / "t"), "--", make_program(SIMPLE)], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    assert not calls.exists(), calls.read_text()


def _ctf_version(trace: Path) -> str:
    """The CTF version of a trace's metadata: CTF 2's is a JSON text sequence, each
    fragment after a record separator (0x1e); CTF 1.8's is TSDL, packetized or not."""
    (metadata,) = trace.rglob("metadata")
    return "2" if metadata.read_bytes()[:1] == b"\x1e" else "1.8"


def test_run_writes_the_format_lttng_create_writes(make_program, tmp_path):
    """Without --trace-format, `pyust run`'s liblttng-ctl set-up leaves the CTF version
    to the session daemon, as `lttng create` does (CTF 2 from LTTng 2.15 unless the daemon
    is told otherwise; a configuration file would have said CTF 1.8): the same version as
    the run whose session `lttng create` made (SETUP_BY_COMMANDS). --trace-format ctf-1.8
    is written as asked where LTTng knows formats."""
    program = make_program(SIMPLE)
    versions = {}
    for case, options in (("ctl", []), ("commands", list(SETUP_BY_COMMANDS)),
                          ("ctf-1.8", ["--trace-format", "ctf-1.8"])):
        result = run_pyust(["run", "-o", str(tmp_path / case), *options, "--", program])
        if case == "ctf-1.8" and "writes CTF 1.8 only" in result.stderr:
            continue  # LTTng before 2.15: one format, checked by the first two
        assert result.returncode == 0, result.stderr
        versions[case] = _ctf_version(tmp_path / case)
    assert versions["ctl"] == versions["commands"]
    assert versions.get("ctf-1.8", "1.8") == "1.8"


def test_run_metadata_reaches_the_trace_while_the_program_runs(make_program, tmp_path):
    """pyust run's metadata channel has a switch timer (set through liblttng-ctl, or
    `lttng enable-channel` where the library cannot): the consumer daemon writes the
    trace's metadata while the program runs, not only once it has ended."""
    probe = unique_name("md")
    lttng("create", probe, "--output", str(tmp_path / "probe"))
    try:
        refused = lttng("enable-channel", "--userspace", "--session", probe, "--switch-timer",
                        "10000", "metadata", check=False).returncode != 0
    finally:
        lttng("destroy", probe, check=False)
    if refused:  # LTTng 2.16 refuses the channel name (pyust run goes on without the timer)
        pytest.skip("this LTTng refuses a channel named metadata")
    out = tmp_path / "t"
    program = make_program(
        "import glob, os, sys, time\n"
        "def f():\n    return 1\n"
        "f()\n"
        "deadline = time.monotonic() + 30\n"
        "def written():\n"
        "    return sum(os.path.getsize(path) for path in\n"
        "               glob.glob(os.path.join(sys.argv[1], '**', 'metadata'), recursive=True))\n"
        "while not written() and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print('written' if written() else 'not written')\n")
    result = run_pyust(["run", "-o", str(out), "--", program, str(out)])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "written\n"


def test_help_explains_every_command():
    top = run_pyust(["--help"])
    assert top.returncode == 0
    for word in ("run", "enable", "disable", "--c-calls", "--lines", "lttng enable-event"):
        assert word in top.stdout
    run_help = run_pyust(["run", "--help"])
    for option in ("--output", "--name", "--subbuf-size", "--num-subbuf", "--no-discard",
                   "--no-count", "--c-calls", "--lines"):
        assert option in run_help.stdout


def pyust_command(directory: Path, name: str = "pyust") -> Path:
    """The command Meson installs (python/command.py.in), bound to the interpreter under
    test, as directory/name."""
    template = (Path(__file__).resolve().parents[2] / "python" / "command.py.in").read_text()
    command = directory / name
    command.write_text(template.replace("@PYTHON@", PYTHON).replace("@COMMAND@", name))
    command.chmod(0o755)
    return command


@pytest.mark.parametrize("name", ["pyust", "pyust-3.13"])
def test_the_command_names_itself(tmp_path, name):
    """Run as the pyust command, usage lines and messages say its name; `python -m pyust`
    keeps its own."""
    command = pyust_command(tmp_path, name)
    top = subprocess.run([str(command), "--help"], capture_output=True, text=True,
                         timeout=60, env=child_env())
    assert top.returncode == 0, top.stderr
    assert top.stdout.startswith(f"usage: {name} [-h]")
    assert f"Run `{name} COMMAND --help`" in top.stdout
    report = subprocess.run([str(command), "report", "--help"], capture_output=True, text=True,
                            timeout=60, env=child_env())
    assert report.stdout.startswith(f"usage: {name} report ")
    wrong = subprocess.run([str(command), "run", "--bogus", "--", "x.py"], capture_output=True,
                           text=True, timeout=60, env=child_env())
    assert wrong.returncode == 2
    assert wrong.stderr == (f"pyust: error: unrecognized arguments: --bogus "
                            f"(see {name} run --help)\n")
    module = run_pyust(["run", "--bogus", "--", "x.py"])
    assert module.stderr.endswith("(see python -m pyust run --help)\n")


def test_the_commands_hook_mode_runs_the_program_as_python_does(tmp_path):
    """`pyust -- app.py` gives the program the sys.path and sys.orig_argv of `python app.py`:
    the command's own directory is not on its path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = pyust_command(bin_dir)
    program = tmp_path / "app.py"
    program.write_text("import sys\nprint(sys.path)\nprint(sys.orig_argv[1:], sys.argv)\n")
    hooked = subprocess.run([str(command), "--", str(program), "a"], capture_output=True,
                            text=True, timeout=60, env=child_env())
    assert hooked.returncode == 0, hooked.stderr
    assert hooked.stdout == run_plain([str(program), "a"]).stdout


def test_plugin_path_is_where_babeltrace2_finds_the_plugin(tmp_path):
    """`pyust plugin-path` prints the directory of the plugin pyust report uses, from which
    babeltrace2 loads it; one line and status 1 where there is none."""
    env = child_env()
    env.pop("PYUST_PLUGIN_PATH", None)
    built = Path(PYUST_PATH).parent / "src" / "plugin"
    if not (built / "babeltrace-plugin-pyust.so").is_file():
        pytest.skip(f"no plugin built in {built} (-Dplugin=disabled?)")
    result = run_pyust(["plugin-path"], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{built}\n"
    listed = subprocess.run(["babeltrace2", "--omit-system-plugin-path", "--plugin-path",
                             result.stdout.strip(), "list-plugins"], capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "pyust:" in listed.stdout and "sink.pyust.report" in listed.stdout
    result = run_pyust(["plugin-path"], env=dict(env, PYUST_PLUGIN_PATH=str(tmp_path)))
    assert result.returncode == 1
    assert result.stderr == (f"pyust: error: babeltrace-plugin-pyust.so is not in {tmp_path}: "
                             "build pyust again (scripts/setup, or pip install)\n")
    assert "plugin-path" in run_pyust(["--help"]).stdout


def test_enable_disable_pth(make_program, tmp_path, session):
    """`pyust enable VAR` traces every interpreter of the environment whose
    VAR is set; `disable` undoes it. The user site directory stands in for
    the environment's site-packages."""
    from pyusttest.environment import user_site_env

    env, site = user_site_env(tmp_path)
    enabled = subprocess.run([PYTHON, "-m", "pyust", "enable", "MY_TRACE"], capture_output=True,
                             text=True, env=env)
    assert enabled.returncode == 0, enabled.stderr
    assert (site / "pyust-activate.pth").exists()
    program = make_program("import sys\ndef g():\n    pass\ng()\n"
                           "print(sys.modules['pyust'].is_active() if 'pyust' in sys.modules else False)\n")
    traced = subprocess.run([PYTHON, program], capture_output=True, text=True,
                            env={**env, "MY_TRACE": "1"})
    untraced = subprocess.run([PYTHON, program], capture_output=True, text=True, env=env)
    ignored = subprocess.run([PYTHON, "-E", "-c", "import pyust._activate as a;"
                              "print(a.is_allowed('MY_TRACE'))"],
                             capture_output=True, text=True, env={**env, "MY_TRACE": "1"},
                             cwd=str(site))
    bad = subprocess.run([PYTHON, program], capture_output=True, text=True,
                         env={**env, "MY_TRACE": "--evil"})
    disabled = subprocess.run([PYTHON, "-m", "pyust", "disable"], capture_output=True,
                              text=True, env=env)
    assert traced.stdout == "True\n", traced.stderr
    assert untraced.stdout == "False\n"
    assert ignored.stdout == "False\n"
    assert bad.stdout == "False\n"
    assert "unknown option '--evil'" in bad.stderr
    assert disabled.returncode == 0
    assert not (site / "pyust-activate.pth").exists()
    trace = session.read()
    g_calls = [e for e in trace.of("python:call") if e["fields"]["name"] == "g"]
    assert len(g_calls) == 1  # the traced run only


def test_activation_ignored_when_uid_is_not_euid(make_program, tmp_path):
    """A setuid program does not inherit tracing: with the activation variable set, an
    interpreter whose real uid differs from its effective one (setpriv: real nobody,
    effective root) does not start pyust; with the same ids it does. The .pth is in a venv's
    site-packages (Python skips the user site directory itself when uid != euid)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run a process with uid != euid")
    venv = tmp_path / "venv"
    made = subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "pyust").symlink_to(os.path.join(PYUST_PATH, "pyust"))
    env = child_env()
    env.pop("PYTHONPATH", None)
    enabled = subprocess.run([python, "-m", "pyust", "enable", "MY_TRACE"], capture_output=True,
                             text=True, env=env)
    assert enabled.returncode == 0, enabled.stderr
    assert (Path(site) / "pyust-activate.pth").exists()
    program = make_program("import os, sys\n"
                           "print(os.getuid(), os.geteuid(), 'pyust' in sys.modules and "
                           "sys.modules['pyust'].is_active())\n")
    env["MY_TRACE"] = "1"
    same = subprocess.run([python, program], capture_output=True, text=True, env=env)
    setuid = subprocess.run(["setpriv", "--ruid", "65534", "--euid", "0", python, program],
                            capture_output=True, text=True, env=env)
    assert same.stdout == "0 0 True\n", same.stderr
    # Once, silently: site reads a venv's .pth twice (lib/ and its lib64 link) on Debian.
    assert "pyust" not in same.stderr
    assert setuid.stdout == "65534 0 False\n", setuid.stderr


def test_ctrl_c_between_create_and_start_leaves_no_session(make_program, tmp_path):
    """Ctrl-C while `pyust run` sets its session up: one line, status 130,
    and the half-made session is destroyed. A wrapper in front of the real
    lttng holds `enable-channel` long enough to interrupt it there."""
    name = unique_name("cc")
    env = lttng_held_at_setup(tmp_path, 60)
    with run_as_from_a_terminal(name, tmp_path / "t", make_program(SIMPLE), env,
                                SETUP_BY_COMMANDS) as child:
        wait_held(tmp_path)
        assert name in session_names()  # created, the program not started
        os.killpg(child.pid, signal.SIGINT)
        child.wait(timeout=60)
        _no_session_left(name)
    assert child.returncode == 130
    assert child.stderr.read().strip() == "pyust: interrupted"
