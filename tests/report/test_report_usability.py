"""`pyust report` on outputs a user works with (issue 12): a closed pipe, --pid/--tid
that match nothing, sorting and limits, huge outputs, several processes in one trace,
Chrome JSON that a viewer loads."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, RUN_TIMEOUT, child_env
from pyusttest.report import ok, one_error_line, profile_rows, report, trace_program
from pyusttest.traces import folded, read_trace

# 2,000 functions, each called once: a tree and a profile far bigger than a pipe's buffer.
WIDE = "\n".join(f"def f{i}():\n    return {i}\n" for i in range(2000)) + "\n" + \
    "for i in range(2000):\n    globals()[f'f{i}']()\n"


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    return trace_program(tmp_path_factory.mktemp("wide"), WIDE)


def babeltrace2_reading(path) -> list:
    """The pids of babeltrace2 processes reading the trace at path."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"babeltrace2") and str(path).encode() in b" ".join(argv):
            found.append(int(entry))
    return found


@pytest.mark.parametrize("sigpipe", ["default", "ignored"])
@pytest.mark.parametrize("format", ["tree", "chrome"])
def test_closed_pipe_ends_the_report_quietly(wide, format, sigpipe):
    """`pyust report TRACE | head -1`: no traceback, no error, babeltrace2 gone."""
    restore = sigpipe == "default"
    everything = {"tree": "--min-share", "chrome": "--max-size"}[format]
    # A pipe of one page, read one byte at a time: the report surely outgrows what the
    # reader took (an io buffer reads 8 KiB on 3.13, 128 KiB on 3.14, more than a
    # default pipe holds, and the whole report could then be written before the close).
    reader, writer = os.pipe()
    fcntl.fcntl(writer, fcntl.F_SETPIPE_SZ, 4096)
    child = subprocess.Popen([PYTHON, "-m", "pyust", "report", "-f", format, everything, "0",
                              wide.path], stdout=writer, stderr=subprocess.PIPE,
                             env=child_env(), restore_signals=restore,
                             preexec_fn=None if restore else
                             (lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN)))
    os.close(writer)
    line = b""
    while not line.endswith(b"\n"):  # `head -1`
        byte = os.read(reader, 1)
        assert byte, f"the report ended before its first line: {line!r}"
        line += byte
    os.close(reader)
    stderr = child.stderr.read().decode()
    status = child.wait(timeout=120)
    assert stderr == ""
    assert status == -signal.SIGPIPE
    deadline = time.monotonic() + 5
    while babeltrace2_reading(wide.path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert babeltrace2_reading(wide.path) == []


# --------------------------------------------------------- --pid/--tid that match nothing

def test_pid_and_tid_that_match_nothing_list_what_the_trace_holds(wide):
    result = report(wide.path, "--pid", 2**31 + 7)
    line = one_error_line(result)
    assert result.returncode == 1 and result.stdout == ""
    # Other processes of the machine may be in the trace too (a session records every
    # process that emits python:* events).
    assert line.startswith(f"pyust: error: no event matches --pid {2**31 + 7}: the trace holds ")
    assert f"pid {wide.pid} ({process_name(wide)}) with thread {wide.pid}" in line
    line = one_error_line(report(wide.path, "-f", "chrome", "--pid", wide.pid, "--tid", 1))
    assert f"no event matches --pid {wide.pid} --tid 1: the trace holds " in line
    assert f"pid {wide.pid} ({process_name(wide)}) with thread {wide.pid}" in line


def process_name(traced) -> str:
    """How reports name the traced program: the command line of its python:process event,
    the interpreter by its base name ("python3 /tmp/.../prog.py")."""
    command = next(e for e in traced.trace.events
                   if e["name"] == "python:process")["fields"]["command"]
    interpreter, _, rest = command.partition(" ")
    assert rest == str(traced.program)
    return f"{os.path.basename(interpreter)} {rest}"


# ------------------------------------------------------------------- sorting and limits

def rows_of(text: str) -> list:
    """The profile's table rows as (ncalls, self_ms, total_ms, mean_us, label)."""
    rows = []
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["ncalls"])
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("..."):
            break
        ncalls, self_ms, total_ms, mean_us, label = line.split()[:5]
        rows.append((int(ncalls), float(self_ms), float(total_ms), float(mean_us), label))
    return rows


SORTED = """\
def once():
    sum(range(20000))
def often():
    pass
def middle():
    for _ in range(3):
        sum(range(2000))
for _ in range(50):
    often()
once()
for _ in range(4):
    middle()
"""


@pytest.fixture(scope="module")
def sorted_program(tmp_path_factory):
    return trace_program(tmp_path_factory.mktemp("sorted"), SORTED)


@pytest.mark.parametrize("key, column", [("calls", 0), ("self", 1), ("total", 2), ("mean", 3)])
def test_profile_sorts_by_the_column_asked(sorted_program, key, column):
    rows = rows_of(ok(sorted_program.path, "--sort", key, "--pid", sorted_program.pid,
                      "--modules", "__main__"))
    values = [row[column] for row in rows]
    assert values == sorted(values, reverse=True)
    assert {row[4] for row in rows} == {"__main__:<module>", "__main__:once", "__main__:often",
                                        "__main__:middle"}
    if key == "calls":
        assert rows[0][4] == "__main__:often"


def test_profile_limit_says_what_it_left_out(wide):
    text = ok(wide.path, "--limit", "5", "--pid", wide.pid)
    header = text.splitlines()[0]
    functions = int(header.split(" functions in ")[0].split(" of ")[-1])
    assert functions > 2000
    assert len(rows_of(text)) == 5
    last = [line for line in text.splitlines() if line.startswith("... ")]
    assert last and last[0].startswith(f"... {functions - 5:,} more functions not shown (")
    assert last[0].endswith("): --limit 0 shows them all")
    everything = ok(wide.path, "--limit", "0", "--pid", wide.pid)
    assert len(rows_of(everything)) == functions
    assert "more functions not shown" not in everything


def test_bad_sort_and_limits_are_usage_errors(wide):
    assert report(wide.path, "--sort", "name").returncode == 2
    assert "--limit is for the profile, lines and tasks" in one_error_line(
        report(wide.path, "-f", "folded", "--limit", "3"))
    assert report(wide.path, "--limit", "-1").returncode == 2
    assert "--tasks is for the tree, folded and svg formats" in one_error_line(
        report(wide.path, "-f", "profile", "--tasks"))
    assert "--sort is for the profile and lines" in one_error_line(
        report(wide.path, "-f", "tasks", "--sort", "calls"))


# ------------------------------------------------------- huge outputs: sympy's import

SYMPY = """\
import sympy
x = sympy.Symbol("x")
print(sympy.integrate(sympy.sin(x) ** 2 * sympy.exp(x), x))
"""


@pytest.fixture(scope="module")
def sympy_trace(tmp_path_factory):
    pytest.importorskip("sympy")
    check = subprocess.run([PYTHON, "-c", "import sympy"], capture_output=True)
    if check.returncode != 0:
        pytest.skip("sympy is not installed for the interpreter under test (python3-sympy)")
    return run_untouched(tmp_path_factory.mktemp("sympy"), SYMPY)


@dataclass
class Run:
    path: Path
    program: Path
    pid: int


def record(directory: Path, source: str, *args: str) -> tuple:
    """`pyust run` on `source` written as directory/prog.py with args, tracing into
    directory/trace; (program, trace path). The run must succeed."""
    program = directory / "prog.py"
    program.write_text(source)
    path = directory / "trace"
    result = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", str(path), "--", str(program),
                             *args],
                            capture_output=True, text=True, timeout=RUN_TIMEOUT,
                            env=child_env(), cwd=directory)
    assert result.returncode == 0, result.stderr
    return program, path


def run_untouched(directory: Path, source: str) -> Run:
    """`pyust run` on a program, without reading its (big) trace into Python: its pid is the
    one whose profile is named by the program's file."""
    program, path = record(directory, source)
    headers = [line for line in ok(path, "--limit", "1").splitlines()
               if line.startswith("pid ") and f" {program}): " in line]
    assert len(headers) == 1, headers
    return Run(path, program, int(headers[0].split()[1]))


def test_huge_profile_shows_the_top_rows_by_default(sympy_trace):
    text = ok(sympy_trace.path, "--pid", sympy_trace.pid)
    header = text.splitlines()[0]
    functions = int(header.split(" functions in ")[0].split(" of ")[-1])
    assert functions > 2000  # sympy's import: thousands of functions
    assert len(rows_of(text)) == 40
    assert f"... {functions - 40:,} more functions not shown (" in text
    assert len(text.splitlines()) < 60


def test_huge_tree_is_pruned_by_default_with_a_note(sympy_trace):
    pruned = ok(sympy_trace.path, "-f", "tree", "--pid", sympy_trace.pid)
    whole = ok(sympy_trace.path, "-f", "tree", "--min-share", "0", "--pid", sympy_trace.pid)
    assert len(whole) > 2_000_000  # megabytes: not something to read
    assert len(pruned) < len(whole) / 20
    notes = [line for line in pruned.splitlines() if " call paths under " in line]
    assert len(notes) == 1 and notes[0].endswith(
        " call paths under 0.5% of their thread's time not shown, with what they call: "
        "--min-share 0 shows them all")
    assert "not shown" not in whole
    # What is shown is the same call paths with the same times.
    whole_lines = set(whole.splitlines())
    assert all(line in whole_lines for line in pruned.splitlines() if line not in notes)


# ------------------------------------------------------- huge outputs: a deep recursion

DEEP = """\
import sys
sys.setrecursionlimit(10000)
def rec(n):
    if n:
        rec(n - 1)
rec(1500)
"""


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    return trace_program(tmp_path_factory.mktemp("deep"), DEEP)


def frame_lines(tree: str) -> list:
    """The tree's lines of frames (indented, with a time), cut markers included."""
    return [line for line in tree.splitlines() if line.startswith("  ")]


def test_deep_recursion_is_cut_at_1000_frames_by_default_with_its_time(deep):
    """Issue 26: a tree's indentation and a folded stack's text grow with the depth (a
    recursion 20,000 deep gave 390 MB of tree and 2.6 GB of folded stacks): past 1,000
    frames, one line or stack "[... N frames cut]" holds what was cut, and notes say so."""
    result = report(deep.path, "-f", "tree", "--pid", deep.pid, "--min-share", "0")
    assert result.returncode == 0, result.stderr
    cut = frame_lines(result.stdout)
    markers = [m for m in map(re.compile(r"( +)\S+ [mun]?s  \[\.\.\. ([\d,]+) frames "
                                         r"cut\]").fullmatch, cut) if m]
    assert len(markers) == 1, f"{len(result.stdout):,} bytes, {len(markers)} cut markers"
    marker = markers[0]
    whole = ok(deep.path, "-f", "tree", "--pid", deep.pid, "--min-share", "0", "--max-depth", "0")
    assert len(marker.group(1)) == 2 * 1001  # under the frame 1,000 deep
    frames = int(marker.group(2).replace(",", ""))
    assert len(cut) - 1 + frames == len(frame_lines(whole)) > 1500
    assert f"{frames:,} call paths deeper than 1,000 frames cut" in result.stdout
    assert f"pyust: note: tree: {frames:,} call paths deeper than 1,000 frames cut" in \
        result.stderr
    assert len(result.stdout) < len(whole) / 2
    # Folded: the cut frame holds the time of the frames cut, so the sums stay the same.
    stacks = folded(ok(deep.path, "-f", "folded", "--pid", deep.pid))
    whole_stacks = folded(ok(deep.path, "-f", "folded", "--pid", deep.pid, "--max-depth", "0"))
    assert sum(stacks.values()) == sum(whole_stacks.values())
    assert max(len(stack.split(";")) for stack in stacks) == 1001
    assert [s for s in stacks if s.endswith(f";[... {frames:,} frames cut]")]


@pytest.mark.parametrize("format_", ["tree", "folded", "svg", "profile"])
def test_max_size_bounds_every_format_and_says_what_it_left_out(deep, wide, format_):
    # The profile of a recursion is one row: 2,000 functions instead.
    traced, args = (wide, ["--limit", "0"]) if format_ == "profile" else \
        (deep, ["--max-depth", "0"])
    result = report(traced.path, "-f", format_, "--pid", traced.pid, "--max-size", "0.02", *args)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) < 20_000 + 5_000  # the bound, then the notes (svg: its script)
    note = re.search(r"pyust: note: \w+: the output reached 0\.02 MB: ([\d,]+) more "
                     r"(lines|stacks|boxes) left out \(--max-size 0 writes them all\)",
                     result.stderr)
    assert note, result.stderr
    if format_ in ("tree", "profile"):
        assert result.stdout.endswith(f"... the output reached 0.02 MB: {note.group(1)} more "
                                      "lines not shown: --max-size 0 shows them all\n")
    elif format_ == "folded":
        assert all(re.fullmatch(r".+ \d+", line) for line in result.stdout.splitlines())
    else:
        ElementTree.fromstring(result.stdout)


# ---------------------------------------------------------------- several processes

FORK = """\
import fcntl
import json
import os
import re

def in_child():
    return sum(range(5000))

def in_parent():
    return sum(range(9000))

def both():
    return 1

both()
pid = os.fork()
if pid == 0:
    in_child()
    both()
    os._exit(0)
in_parent()
os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def forked(tmp_path_factory):
    """A program that forks, traced by `pyust run` with arguments: (trace, the command line
    that names both processes, parent pid, child pid)."""
    directory = tmp_path_factory.mktemp("fork")
    program, path = record(directory, FORK, "--mode", "it's forking; really\nnow")
    trace = read_trace(path, owner=directory)
    codes = trace.codes
    pids = {}
    for event in trace.events:
        if event["name"] == "python:call":
            qualname = codes.get(event["fields"]["id"], {}).get("qualname")
            if qualname in ("in_child", "in_parent"):
                pids[qualname] = event["vpid"]
    assert len(pids) == 2 and pids["in_child"] != pids["in_parent"], pids
    # The command line as a shell would need it typed, the interpreter by its base name; its
    # ';' kept and its line feed written \n (they read \x3b and \x0a).
    command = f"{os.path.basename(PYTHON)} {program} --mode 'it'\\''s forking; really\\nnow'"
    return path, command, pids["in_parent"], pids["in_child"]


def tables_of(text: str) -> dict:
    """A profile with a table per process -> {pid: {label: ncalls}}."""
    tables = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("pid ") and " calls of " in line:
            tables[int(line.split()[1])] = {row[4]: row[0]
                                            for row in rows_of("\n".join(lines[i:]))}
    return tables


def test_each_process_has_its_profile_named_by_its_command(forked):
    path, command, parent, child = forked
    text = ok(path, "--pid", parent) + ok(path, "--pid", child)
    assert f"pid {parent} ({command}): " in text
    # A forked child has its parent's command line.
    assert f"pid {child} ({command}): " in text
    text = ok(path, "--modules", "__main__", "--limit", "0")
    tables = tables_of(text)
    assert parent in tables and child in tables, text
    assert tables[parent]["__main__:in_parent"] == 1 and "__main__:in_child" not in tables[parent]
    assert tables[child]["__main__:in_child"] == 1 and "__main__:in_parent" not in tables[child]
    assert tables[parent]["__main__:both"] == 1 and tables[child]["__main__:both"] == 1


def test_merge_processes_gives_one_profile(forked):
    path, command, parent, child = forked
    text = ok(path, "--modules", "__main__", "--limit", "0", "--merge-processes")
    assert "processes merged: " in text.splitlines()[0]
    assert f"pid {parent} ({command})" in text.splitlines()[0]
    assert f"pid {child} ({command})" in text.splitlines()[0]
    rows = {row[4]: row[0] for row in rows_of(text)}
    assert rows["__main__:both"] == 2
    assert rows["__main__:in_child"] == rows["__main__:in_parent"] == 1


WRAPPED_FORK = """\
import os

def in_child():
    return 1

def in_parent():
    return 2

with open("/proc/sys/kernel/pid_max") as f:
    pid_max = int(f.read())
# The kernel hands out pid_max - 1 last: the child's pid wraps around and is the smaller.
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(pid_max - 1))
pid = os.fork()
if pid == 0:
    in_child()
    os._exit(0)
os.waitpid(pid, 0)
in_parent()
"""


@pytest.mark.skipif(not os.access("/proc/sys/kernel/ns_last_pid", os.W_OK),
                    reason="setting the next pid (/proc/sys/kernel/ns_last_pid) needs root")
def test_processes_come_in_the_order_they_started(tmp_path):
    """Pids wrap around at the kernel's pid_max, so a child's can be smaller than its
    parent's: the profile still shows the parent's table first, and the merged title names
    the parent first."""
    program, path = record(tmp_path, WRAPPED_FORK)
    trace = read_trace(path, owner=tmp_path)
    codes = trace.codes
    pids = {codes[e["fields"]["id"]]["qualname"]: e["vpid"] for e in trace.of("python:call")
            if codes[e["fields"]["id"]]["qualname"] in ("in_child", "in_parent")}
    parent, child = pids["in_parent"], pids["in_child"]
    assert child < parent, pids  # the case is armed
    headers = [int(line.split()[1]) for line in ok(path, "--modules", "__main__").splitlines()
               if line.startswith("pid ") and " calls of " in line]
    assert headers == [parent, child]
    merged = ok(path, "--merge-processes").splitlines()[0]
    assert merged.index(f"pid {parent} ") < merged.index(f"pid {child} "), merged


def test_a_short_program_profiles_only_its_own_functions(tmp_path):
    """pyust's own machinery leaves no row in the program's profile: a program that starts no
    thread has no threading:_shutdown, Thread._stop or _maintain_shutdown_locks (the
    interpreter ran threading._shutdown at exit because pyust had imported threading)."""
    program, path = record(tmp_path, "def f():\n    return 1\nf()\nprint('hello')\n")
    rows = profile_rows(ok(path, "--limit", "0"))
    assert set(rows) == {"__main__:<module>", "__main__:f"}, rows


SPAWN = """\
import subprocess, sys
if sys.argv[1:] == ["parent"]:
    subprocess.run([sys.executable, __file__, "child", "caf\u00e9", "x" * 5000], check=True)
"""


def test_children_are_named_by_their_own_command_lines(tmp_path):
    """A child started with other arguments has its own title; a long command line is cut
    in the event (4096 bytes) and further in titles (160 bytes), never inside a character."""
    program, path = record(tmp_path, SPAWN, "parent")
    python = os.path.basename(PYTHON)
    commands = {e["vpid"]: e["fields"]["command"]
                for e in read_trace(path, owner=tmp_path).events if e["name"] == "python:process"}
    assert len(commands) == 2, commands
    parent = next(pid for pid, command in commands.items() if command.endswith(" parent"))
    child = next(pid for pid in commands if pid != parent)
    assert commands[parent] == f"{PYTHON} {program} parent"
    assert commands[child].startswith(f"{PYTHON} {program} child caf\u00e9 xxxx")
    assert commands[child].endswith("x...") and len(commands[child].encode()) == 4096
    headers = [line for line in ok(path, "--limit", "1").splitlines() if line.startswith("pid ")]
    assert f"pid {parent} ({python} {program} parent): " in "\n".join(headers)
    title = next(line for line in headers if line.startswith(f"pid {child} "))
    named = title[title.index("(") + 1:title.index("): ")]
    assert named.startswith(f"{python} {program} child caf\u00e9 xxx") and named.endswith("x...")
    assert len(named.encode()) == 163  # 160 bytes of the command line, then "..."


def test_every_format_names_the_processes(forked, tmp_path):
    path, command, parent, child = forked
    title = {pid: f"pid {pid} ({command})" for pid in (parent, child)}
    stacks = ok(path, "-f", "folded", "--modules", "__main__")
    # Where ';' separates frames, and only there, a title's ';' is escaped.
    frame = {pid: text.replace(";", r"\x3b") for pid, text in title.items()}
    firsts = {line.split(";")[0] for line in stacks.splitlines()}
    assert frame[parent] in firsts and frame[child] in firsts
    assert any(line.startswith(f"{frame[child]};") and ";__main__:in_child " in line
               for line in stacks.splitlines()), stacks
    assert any(line.startswith(f"{frame[parent]};") and ";__main__:in_parent " in line
               for line in stacks.splitlines()), stacks
    merged = ok(path, "-f", "folded", "--modules", "__main__", "--merge-processes")
    assert not any(line.startswith("pid ") for line in merged.splitlines())
    tree = ok(path, "-f", "tree", "--pid", child)
    assert tree.startswith(f"{title[child]} tid {child}")
    data = json.loads(ok(path, "-f", "chrome"))
    names = {e["pid"]: e["args"]["name"] for e in data["traceEvents"]
             if e["name"] == "process_name"}
    assert names[parent] == title[parent] and names[child] == title[child]
    svg = ok(path, "-f", "svg")
    assert f"{title[child]} tid {child}" in svg


# ------------------------------------------------------------------ chrome's size cap

def x_events(data: dict) -> list:
    return [(e["name"], e["ts"], e["dur"], e["pid"], e["tid"]) for e in data["traceEvents"]
            if e["ph"] == "X"]


def test_chrome_size_cap_keeps_the_timeline_whole_up_to_the_cut(wide):
    full = json.loads(ok(wide.path, "-f", "chrome", "--pid", wide.pid, "--max-size", "0"))
    assert "cut" not in full["otherData"]
    assert len(json.dumps(full)) > 200_000
    result = report(wide.path, "-f", "chrome", "--pid", wide.pid, "--max-size", "0.1")
    assert result.returncode == 0, result.stderr
    capped = json.loads(result.stdout)
    assert len(result.stdout) < 100_000 + 2_000  # the cap, and the frames open at the cut
    note = capped["otherData"]["cut"]
    assert re.fullmatch(r"[\d,]+ frames that started at or after \+[\d.]+ [mun]?s were left "
                        r"out: the output reached 0\.1 MB with [\d,]+ frames \(.*\)", note), note
    assert f"pyust: note: chrome: {note}" in result.stderr
    kept = x_events(capped)
    left_out = int(note.split()[0].replace(",", ""))
    assert len(kept) + left_out == len(x_events(full))
    # Every frame that started before the cut is there (the outermost one too), none after.
    missing = set(x_events(full)) - set(kept)
    assert len(missing) == left_out
    assert max(e[1] for e in kept) <= min(e[1] for e in missing)
    assert any(name == "__main__:<module>" for name, *_ in kept)


def test_chrome_default_cap_is_20_mb(wide):
    """A normal trace's chrome output is not cut; --show-command shows the cap given."""
    result = report(wide.path, "-f", "chrome", "--pid", wide.pid, "--show-command")
    assert result.returncode == 0
    assert "-p max-size=20000000" in result.stderr
    assert "cut" not in json.loads(result.stdout)["otherData"]


# ----------------------------------------------------------- a real viewer: speedscope

def speedscope_release() -> Path:
    """speedscope's static web app (npm install -g speedscope), or a skip saying so."""
    try:
        root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        root = ""
    release = Path(root) / "speedscope" / "dist" / "release"
    if not root or not (release / "index.html").is_file():
        pytest.skip("speedscope is not installed: npm install -g speedscope")
    return release


def speedscope_title(directory: Path, name: str) -> str:
    """Opens directory/name in speedscope in headless Chromium; the page's title, which
    speedscope sets to "NAME - speedscope" once it has imported the profile."""
    import http.server
    import threading
    from functools import partial

    (directory / "app").symlink_to(speedscope_release())
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        dom = subprocess.run(
            [shutil.which("chromium") or "chromium", "--headless", "--no-sandbox",
             "--disable-gpu", "--no-first-run", "--virtual-time-budget=30000", "--dump-dom",
             f"{base}/app/index.html#profileURL={base}/{name}"],
            capture_output=True, text=True, timeout=280).stdout
    finally:
        server.shutdown()
    match = re.search(r"<title>([^<]*)</title>", dom)
    return match.group(1) if match else ""


@pytest.mark.parametrize("format, name", [("folded", "prog.folded"), ("chrome", "prog.json")])
def test_outputs_load_in_speedscope(wide, tmp_path, format, name):
    ok(wide.path, "-f", format, "--pid", wide.pid, "-o", tmp_path / name)
    assert speedscope_title(tmp_path, name) == f"{name} - speedscope"


# ------------------------------------------------------------------ lines, by time

LINES = """\
def once():
    sum(range(20000))
def often():
    pass
for _ in range(50):
    often()
once()
"""


def line_rows(text: str) -> list:
    """The lines report's rows as (hits, total_ms, place)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["hits"])
    rows = []
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("..."):
            break
        hits, total_ms, _mean, place = line.split()[:4]
        rows.append((int(hits), float(total_ms), place))
    return rows


def test_lines_are_sorted_by_time_and_limited(tmp_path):
    traced = trace_program(tmp_path, LINES, hook_flags=("--lines",))
    text = ok(traced.path, "-f", "lines", "--pid", traced.pid, "--modules", "__main__")
    assert text.startswith(f"pid {traced.pid} (")
    rows = line_rows(text)
    assert [row[1] for row in rows] == sorted((row[1] for row in rows), reverse=True)
    assert {row[2].rsplit(":", 1)[1] for row in rows} == {"1", "2", "3", "4", "5", "6", "7"}
    by_hits = line_rows(ok(traced.path, "-f", "lines", "--pid", traced.pid, "--modules",
                           "__main__", "--sort", "calls"))
    assert [row[0] for row in by_hits] == sorted((row[0] for row in by_hits), reverse=True)
    limited = ok(traced.path, "-f", "lines", "--pid", traced.pid, "--modules", "__main__",
                 "--limit", "2")
    assert len(line_rows(limited)) == 2
    assert f"... {len(rows) - 2} more lines not shown (" in limited
