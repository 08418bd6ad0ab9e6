"""The integration suite's harness: a real LTTng session daemon, real
sessions, programs traced by the real hook, traces read back with
babeltrace2's Python bindings. Fixtures are in conftest.py.

Environment:
  PYUST_TEST_PYTHON  the interpreter under test (default: this one)
  PYUST_TEST_PATH    where its `pyust` package is (default: build/python)
  PYUST_TEST_FAST    1: trace in the fast mode (`--fast`) and read traces
                     through filter.pyust.expand, so that every test checks
                     that the fast mode records what the standard mode does
  PYUST_PLUGIN_PATH  where pyust's babeltrace2 plugin is, as for pyust report
                     (default: the src/plugin of the build whose python/ is
                     PYUST_TEST_PATH, else babeltrace2's system directory)
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.environ.get("PYUST_TEST_PYTHON", sys.executable)
PYUST_PATH = os.path.abspath(os.environ.get("PYUST_TEST_PATH", str(ROOT / "build" / "python")))
# bt2 comes from Debian's python3-bt2: read traces with Debian's interpreter.
READER = "/usr/bin/python3"
READ_TIMEOUT = 120
RUN_TIMEOUT = 120
FAST = os.environ.get("PYUST_TEST_FAST") == "1"

# The package under test's session control (plain Python: importable here whatever the
# interpreter under test), so that the tests' sessions are made as `pyust run` makes its own.
sys.path.insert(0, PYUST_PATH)
from pyust import babeltrace as pyust_babeltrace, lttng as pyust_lttng  # noqa: E402


# A million events (half a million calls) from one thread, then the hook's
# count of what it handed to LTTng on standard error: the loss-accounting
# tests' program.
MILLION_EVENTS = """\
import sys
import pyust
def f():
    pass
for _ in range(500_000):
    f()
pyust.stop()  # nothing more from this process: the count is final
print(pyust.emitted_events(), file=sys.stderr)
"""


def default_sigint() -> None:
    """A Popen preexec_fn: SIGINT's default disposition in the child, whatever the
    test runner's (a shell's background job ignores SIGINT, and children inherit
    that), as a terminal's foreground program has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def plugin_dir() -> str:
    """pyust's babeltrace2 plugin directory, the one every test uses ("": babeltrace2's
    system one), found as pyust report finds it (pyust.babeltrace.plugin_dirs): the first
    of PYUST_PLUGIN_PATH, else the plugin built beside the package under test
    (BUILD/src/plugin for BUILD/python)."""
    found = pyust_babeltrace.plugin_dirs()
    return found[0] if found else ""

_counter = itertools.count()


def lttng(*args, check=True, timeout=120):
    result = subprocess.run(["lttng", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"lttng {' '.join(args)} failed: {result.stdout}{result.stderr}")
    return result


def session_names() -> set:
    """The names of this user's sessions, from LTTng's machine interface (`lttng --mi xml
    list`), whose schema holds across versions where its words for people do not."""
    import xml.etree.ElementTree as ElementTree

    result = lttng("--mi", "xml", "list", check=False)
    try:
        root = ElementTree.fromstring(result.stdout)
    except ElementTree.ParseError:
        return set()
    mi = "{https://lttng.org/xml/ns/lttng-mi}"
    return {node.findtext(mi + "name") for node in root.iter(mi + "session")}


def unique_name(tag: str = "t") -> str:
    return f"pyust-test-{os.getpid()}-{tag}-{next(_counter)}"


def child_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYUST_PATH + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYUST", None)
    env.update(extra)
    return env


@dataclass
class Trace:
    events: list
    discarded: int

    @property
    def codes(self) -> dict:
        """id -> the python:code fields of its last registration."""
        return {e["fields"]["id"]: e["fields"] for e in self.events if e["name"] == "python:code"}

    def of(self, *names) -> list:
        return [e for e in self.events if e["name"] in names]

    def pids(self) -> list:
        """The processes' vpids in the order of their first events: a forked child after its
        parent, a program run after another after it. (Not sorted: pids wrap around at the
        kernel's pid_max, and a child's can then be the smaller.)"""
        return list(dict.fromkeys(e["vpid"] for e in self.events))

    def threads(self) -> dict:
        """(vpid, vtid) -> that thread's events, in order."""
        by_thread = defaultdict(list)
        for e in self.events:
            by_thread[(e["vpid"], e["vtid"])].append(e)
        return dict(by_thread)

    def flow(self, events=None) -> list:
        """call/return events as ('call', qualname) / ('return', qualname, unwind)."""
        codes = self.codes
        out = []
        for e in self.events if events is None else events:
            if e["name"] == "python:call":
                out.append(("call", codes[e["fields"]["id"]]["qualname"]))
            elif e["name"] == "python:return":
                out.append(("return", codes[e["fields"]["id"]]["qualname"], e["fields"]["unwind"]))
        return out

    def program_flow(self, program: str, events=None) -> list:
        """flow() restricted to code defined in the file `program`."""
        codes = self.codes
        own = {i for i, c in codes.items() if c["file"] == program}
        kept = [e for e in (self.events if events is None else events)
                if e["name"] in ("python:call", "python:return") and e["fields"]["id"] in own]
        return self.flow(kept)


def _read(path, expand: bool | None, *options) -> str:
    """The output of read_trace.py on the trace at path (through filter.pyust.expand when
    expand, or by default in the fast mode)."""
    command = [READER, str(Path(__file__).with_name("read_trace.py")), str(path), *options]
    if FAST if expand is None else expand:
        command += ["--expand", plugin_dir()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=READ_TIMEOUT)
    assert result.returncode == 0, result.stderr
    return result.stdout


def read_trace(path, owner: Path | None = None, *, expand: bool | None = None) -> Trace:
    """The trace at path. A session records every process that emits python:*
    events on the machine; with owner, keep only the processes of the test's
    programs: those that registered code from a file under owner, and their
    forked children (which call code ids carrying such a process's pid).
    expand: read through filter.pyust.expand (default: in the fast mode)."""
    lines = [json.loads(line) for line in _read(path, expand).splitlines()]
    events = lines[:-1]
    if owner is not None:
        prefix = str(owner) + os.sep
        own = {e["vpid"] for e in events
               if e["name"] == "python:code" and e["fields"]["file"].startswith(prefix)}
        grown = True
        while grown:
            children = {e["vpid"] for e in events
                        if e["name"] == "python:call" and e["fields"]["id"] >> 32 in own}
            grown = not children <= own
            own |= children
        events = [e for e in events if e["vpid"] in own]
    return Trace(events=events, discarded=lines[-1]["discarded"])


def count_trace(path, *, expand: bool | None = None) -> tuple:
    """({event name: events}, events reported discarded) of the trace at path, without
    reading the events into Python (read_trace.py --count): for traces of millions."""
    last = json.loads(_read(path, expand, "--count"))
    return last["counts"], last["discarded"]


def assert_balanced(trace: Trace, thread_events: list, *, closed: bool = True):
    """A thread's calls and returns nest: every return closes the innermost
    open call of the same code, depth never goes negative, and (closed)
    nothing stays open."""
    stack = []
    for e in thread_events:
        if e["name"] == "python:call":
            stack.append(e["fields"]["id"])
        elif e["name"] == "python:return":
            assert stack, f"return without call: {e}"
            assert stack[-1] == e["fields"]["id"], (
                f"return of {trace.codes[e['fields']['id']]['qualname']} closes "
                f"{trace.codes[stack[-1]]['qualname']}")
            stack.pop()
    if closed:
        assert not stack, f"still open: {[trace.codes[i]['qualname'] for i in stack]}"
    return stack


class Session(pyust_lttng.Session):
    """A real LTTng session recording python:* as `pyust run` does (pyust.lttng: its channel,
    the contexts vpid and vtid), into tmp_path/directory; read() keeps the test's programs
    (those of files under tmp_path). stop() and destroy() may be called again."""

    def __init__(self, tmp_path: Path, subbuf_size="4M", num_subbuf=8, directory="trace"):
        self.owner = tmp_path
        created = pyust_lttng.Session.create(unique_name(), str(tmp_path / directory))
        super().__init__(created.name, created.path)
        self.path = Path(created.path)
        self.active = True
        self.is_recording = False
        try:
            self.enable_python(pyust_lttng.ChannelConfig(subbuf_size, num_subbuf))
        except BaseException:
            self.destroy()
            raise

    def start(self):
        super().start()
        self.is_recording = True

    def stop(self):
        if self.is_recording:
            super().stop()
            self.is_recording = False

    def read(self, *, expand: bool | None = None) -> Trace:
        self.stop()
        return read_trace(self.path, self.owner, expand=expand)

    def destroy(self):
        if self.active:
            self.active = False
            super().destroy()


def folded(text: str) -> dict:
    """Folded-stack lines (`frame;frame value`) -> {stack: ns}; every line must be one."""
    stacks = {}
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        assert stack and value.isdigit(), f"not a folded line: {line!r}"
        stacks[stack] = stacks.get(stack, 0) + int(value)
    return stacks


def backend(python: str) -> str:
    """This interpreter's own hook back end; where it can, pyust traces calls and returns
    through the eval-frame function instead (python:process says which ran)."""
    return "monitoring" if python_version(python) >= (3, 12) else "setprofile"


_versions: dict = {}


def python_version(python: str) -> tuple:
    if python not in _versions:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout
        _versions[python] = tuple(int(x) for x in out.split())
    return _versions[python]


def native_stacks(session: int) -> str:
    """gdb's backtrace of every thread of every process in session (a process's session
    id), for the message of a test that hung; what gdb could not give is said instead."""
    if shutil.which("gdb") is None:
        return "(no native stacks: gdb is not installed)"
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.getsid(int(entry)) == session:
                pids.append(int(entry))
        except OSError:
            pass
    dumps = []
    for pid in sorted(pids):
        try:
            result = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx",
                                     "-ex", "thread apply all bt"],
                                    capture_output=True, text=True, timeout=60)
            lines = [line for line in result.stdout.splitlines()
                     if line.startswith(("#", "Thread "))]
        except subprocess.TimeoutExpired:
            lines = ["(gdb timed out)"]
        dumps.append(f"== process {pid}\n" + "\n".join(lines))
    return "\n".join(dumps) or f"(no process left in session {session})"


def run_hooked(program_argv: list, *, flags=(), env=None, python=None, **kwargs):
    """`python -m pyust [flags] -- program_argv`: the hook only."""
    flags = [*flags, "--fast"] if FAST else list(flags)
    return subprocess.run([python or PYTHON, "-m", "pyust", *flags, "--", *program_argv],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=env or child_env(), **kwargs)


def run_plain(program_argv: list, *, env=None, python=None, **kwargs):
    """`python program_argv`, untraced: the reference behaviour."""
    return subprocess.run([python or PYTHON, *program_argv], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=env or child_env(), **kwargs)


_SETPROFILE_REFERENCE = """\
import json, runpy, sys
program = sys.argv[1]
seen = []
def profile(frame, event, arg):
    if event in ("call", "return") and frame.f_code.co_filename == program:
        seen.append((event, frame.f_code.co_name))
sys.setprofile(profile)
try:
    runpy.run_path(program, run_name="__main__")
finally:
    sys.setprofile(None)
    print(json.dumps(seen))
"""


def setprofile_flow(program: str, *, python=None) -> list:
    """The ('call' or 'return', co_name) events sys.setprofile sees in one untraced
    run of program on the interpreter under test (its module body shows as
    '<module>'): what that interpreter does where versions differ (a generator
    resumed or not on close(), ...), asked of it instead of read from its version."""
    result = run_plain(["-c", _SETPROFILE_REFERENCE, program], python=python)
    assert result.returncode == 0, result.stderr
    return [tuple(event) for event in json.loads(result.stdout.splitlines()[-1])]


def run_pyust(args: list, *, env=None, **kwargs):
    """`python -m pyust ARGS` (any command; `run` gets --fast in the fast mode)."""
    if FAST and args[:1] == ["run"]:
        args = ["run", "--fast", *args[1:]]
    return subprocess.run([PYTHON, "-m", "pyust", *args], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=env or child_env(), **kwargs)


def user_site_env(tmp_path: Path, **extra) -> tuple:
    """An environment whose user site directory (under tmp_path) stands in for
    the environment's site-packages, with pyust in it and no PYTHONPATH: where
    `pyust enable` writes its .pth. Returns (env, site directory)."""
    version = "%d.%d" % python_version(PYTHON)
    base = tmp_path / "userbase"
    site = base / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    (site / "pyust").symlink_to(os.path.join(PYUST_PATH, "pyust"))
    env = child_env(PYTHONUSERBASE=str(base), **extra)
    env.pop("PYTHONPATH")
    return env, site


# pyust run's options that set its session up with `lttng` commands (create, then
# enable-channel, ...): without them `run -o DIR` sets it up through liblttng-ctl,
# with no process a wrapper could hold.
SETUP_BY_COMMANDS = ("--no-discard",)


def lttng_held_at_setup(tmp_path: Path, seconds: int) -> dict:
    """A child environment whose `lttng` holds pyust run's session set-up for
    `seconds`: `lttng load` once it is done (where liblttng-ctl cannot load), or before
    `enable-channel` (run with SETUP_BY_COMMANDS). The file tmp_path/held appears when
    the hold starts; wait_held() waits for it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = subprocess.run(["sh", "-c", "command -v lttng"], capture_output=True,
                          text=True).stdout.strip()
    wrapper = bin_dir / "lttng"
    wrapper.write_text(f"#!/bin/sh\n"
                       f"if [ \"$1\" = load ]; then {real} \"$@\"; rc=$?\n"
                       f"  touch {tmp_path}/held; sleep {seconds}; exit $rc; fi\n"
                       f"[ \"$1\" = enable-channel ] && {{ touch {tmp_path}/held; sleep {seconds}; }}\n"
                       f"exec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    return child_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def wait_held(tmp_path: Path, timeout: float = 30.0) -> None:
    """Waits until lttng_held_at_setup's hold has started (or `timeout` passed)."""
    deadline = time.monotonic() + timeout
    while not (tmp_path / "held").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


# Delays every message LTTng-UST's threads receive from the session daemon by 50 ms.
_SLOW_REPLIES = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

ssize_t recvmsg(int fd, struct msghdr* message, int flags)
{
    static ssize_t (*real)(int, struct msghdr*, int);
    if (real == NULL)
        real = (ssize_t(*)(int, struct msghdr*, int))dlsym(RTLD_NEXT, "recvmsg");
    ssize_t received = real(fd, message, flags);
    if (syscall(SYS_gettid) != getpid()) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return received;
}
"""


def slow_replies_library(tmp_path: Path) -> str:
    """A library for LD_PRELOAD (built in tmp_path) that delays every message LTTng-UST's
    threads receive from the session daemon by 50 ms: the registration of a process, and a
    session's start in it, take seconds."""
    source = tmp_path / "slow_replies.c"
    source.write_text(_SLOW_REPLIES)
    library = tmp_path / "libslow_replies.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source), "-ldl"],
                   check=True)
    return str(library)
