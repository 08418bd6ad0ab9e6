"""End to end: `pyust run` on fixed programs, then `pyust report` on their traces.

Other processes may emit python:* events while a test records (every session records
the whole machine), so every report here is taken with --pid of the test's program.
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, child_env
from pyusttest.report import ok, profile_rows, report, top_level_time, trace_program
from pyusttest.traces import folded

COUNTS_PROGRAM = """\
def leaf(i):
    return i

def mid(n):
    for i in range(n):
        leaf(i)

def top():
    for _ in range(3):
        mid(5)

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def gen():
    yield 1
    yield 2

top()
fib(6)
for _ in gen():
    pass
"""

# Calls of each function of COUNTS_PROGRAM: fib(6) makes 25 calls; a generator's frame is
# entered once at its start and once per resume (two yields, then its return).
COUNTS = {"<module>": 1, "top": 1, "mid": 3, "leaf": 15, "fib": 25, "gen": 3}

MODULES_PROGRAM = """\
import helper

def leaf():
    pass

def top():
    helper.middle(leaf)
    helper.middle(leaf)

top()
"""

HELPER = """\
def middle(function):
    return inner(function)

def inner(function):
    return function()
"""

LINES_PROGRAM = """\
def work(n):
    total = 0
    for i in range(n):
        total += i
    return total

work(10)
"""

FOO_BAR_BAZ_STACKS = [
    "__main__:<module>",
    "__main__:<module>;__main__:foo",
    "__main__:<module>;__main__:foo;__main__:bar",
    "__main__:<module>;__main__:foo;__main__:bar;__main__:baz",
]


@pytest.fixture(scope="module")
def counts(tmp_path_factory):
    return trace_program(tmp_path_factory.mktemp("counts"), COUNTS_PROGRAM)


@pytest.fixture(scope="module")
def with_lines(tmp_path_factory):
    return trace_program(tmp_path_factory.mktemp("lines"), LINES_PROGRAM, hook_flags=("--lines",))


def own_stacks(stacks: dict) -> dict:
    """The stacks made only of the program's frames (module __main__)."""
    return {s: v for s, v in stacks.items()
            if all(frame.startswith("__main__:") for frame in s.split(";"))}


def test_folded_stacks_of_foo_bar_baz_are_exact(foo_bar_baz):
    stacks = folded(ok(foo_bar_baz.path, "--format", "folded", "--pid", foo_bar_baz.pid))
    own = own_stacks(stacks)
    assert sorted(own) == FOO_BAR_BAZ_STACKS
    assert all(value > 0 for value in own.values())

    # --modules __main__ shows the same frames with the same times, and nothing else.
    only = folded(ok(foo_bar_baz.path, "--format", "folded", "--pid", foo_bar_baz.pid,
                     "--modules", "__main__"))
    assert only == own


def test_folded_self_times_match_the_trace(foo_bar_baz):
    """Each frame's self time is its time minus its callee's, to the nanosecond."""
    events = [e for e in foo_bar_baz.trace.events if e["name"] in ("python:call", "python:return")]
    codes = foo_bar_baz.trace.codes
    spans = {}
    opened = {}
    for event in events:
        qualname = codes[event["fields"]["id"]]["qualname"]
        if codes[event["fields"]["id"]]["module"] != "__main__":
            continue
        if event["name"] == "python:call":
            opened[qualname] = event["ts"]
        else:
            spans[qualname] = event["ts"] - opened.pop(qualname)
    stacks = folded(ok(foo_bar_baz.path, "-f", "folded", "--pid", foo_bar_baz.pid,
                       "--modules", "__main__"))
    assert stacks[FOO_BAR_BAZ_STACKS[3]] == spans["baz"]
    assert stacks[FOO_BAR_BAZ_STACKS[2]] == spans["bar"] - spans["baz"]
    assert stacks[FOO_BAR_BAZ_STACKS[1]] == spans["foo"] - spans["bar"]
    assert stacks[FOO_BAR_BAZ_STACKS[0]] == spans["<module>"] - spans["foo"]


def test_profile_call_counts_are_the_known_counts(counts):
    rows = profile_rows(ok(counts.path, "--pid", counts.pid))
    for name, calls in COUNTS.items():
        assert rows[f"__main__:{name}"][0] == calls, name
    # --modules keeps the counts of the functions it shows.
    rows = profile_rows(ok(counts.path, "--pid", counts.pid, "--modules", "__main__"))
    assert {label: row[0] for label, row in rows.items()} == {
        f"__main__:{name}": calls for name, calls in COUNTS.items()}


def test_self_times_add_up_to_the_threads_traced_time(counts):
    (vtid,) = {e["vtid"] for e in counts.trace.events}
    traced = top_level_time(counts.trace, vtid)
    stacks = folded(ok(counts.path, "--format", "folded", "--pid", counts.pid))
    assert sum(stacks.values()) == traced

    profile = ok(counts.path, "--format", "profile", "--pid", counts.pid)
    rows = profile_rows(profile)
    # self_ms is rounded to the microsecond, row by row.
    assert sum(row[1] for row in rows.values()) == pytest.approx(traced / 1e6,
                                                                 abs=len(rows) * 0.0005 + 1e-9)
    assert "1 thread" in profile.splitlines()[0]


def test_tree_shows_the_call_path_with_counts(counts):
    tree = ok(counts.path, "--format", "tree", "--pid", counts.pid, "--modules", "__main__")
    lines = tree.splitlines()
    # The process is named by its command name and script (issue 12).
    assert lines[0].startswith(f"pid {counts.pid} (python")
    assert f" {counts.program}) tid {counts.pid} (MainThread): " in lines[0]
    body = [line.strip() for line in lines[1:]]
    assert any("__main__:mid  (3 calls" in line for line in body), tree
    assert any("__main__:leaf  (15 calls" in line for line in body), tree
    depth = {line.strip().split("  ")[1]: (len(line) - len(line.lstrip())) // 2
             for line in lines[1:] if "  (" in line}
    assert depth["__main__:leaf"] == depth["__main__:mid"] + 1 == depth["__main__:top"] + 2


def test_modules_hide_frames_and_give_their_time_to_the_caller(tmp_path):
    traced = trace_program(tmp_path, MODULES_PROGRAM, extra_files={"helper.py": HELPER})
    everything = folded(ok(traced.path, "-f", "folded", "--pid", traced.pid))
    only = folded(ok(traced.path, "-f", "folded", "--pid", traced.pid, "--modules", "__main__"))
    assert sorted(only) == ["__main__:<module>", "__main__:<module>;__main__:top",
                            "__main__:<module>;__main__:top;__main__:leaf"]
    # The hidden frames' time stays under <module>, to the nanosecond.
    under_module = sum(v for s, v in everything.items() if s.startswith("__main__:<module>"))
    assert sum(only.values()) == under_module
    assert only["__main__:<module>;__main__:top;__main__:leaf"] == sum(
        v for s, v in everything.items() if s.endswith(";helper:inner;__main__:leaf"))

    both = folded(ok(traced.path, "-f", "folded", "--pid", traced.pid,
                     "--modules", "__main__", "--modules", "helper"))
    assert "__main__:<module>;__main__:top;helper:middle;helper:inner;__main__:leaf" in both


def test_pid_and_tid_select_threads(foo_bar_baz):
    by_pid = ok(foo_bar_baz.path, "-f", "folded", "--pid", foo_bar_baz.pid)
    (vtid,) = {e["vtid"] for e in foo_bar_baz.trace.events}
    assert ok(foo_bar_baz.path, "-f", "folded", "--tid", vtid, "--pid", foo_bar_baz.pid) == by_pid
    # A selection that matches nothing is an error (test_report_usability.py).
    assert report(foo_bar_baz.path, "-f", "folded", "--pid", 2**31 + 7).returncode == 1


def test_time_window_clips_frames(foo_bar_baz):
    codes = foo_bar_baz.trace.codes
    foo = [e["ts"] for e in foo_bar_baz.trace.events
           if e["name"] in ("python:call", "python:return")
           and codes[e["fields"]["id"]]["qualname"] == "foo"]
    begin, end = foo
    args = (foo_bar_baz.path, "-f", "folded", "--pid", foo_bar_baz.pid, "--modules", "__main__")
    whole = folded(ok(*args))
    window = folded(ok(*args, "--from", begin, "--to", end))
    assert sum(window.values()) == end - begin
    for stack in FOO_BAR_BAZ_STACKS[1:]:
        assert window[stack] == whole[stack]
    # The same window in seconds, as babeltrace2 prints times.
    seconds = folded(ok(*args, "--from", f"{begin // 10**9}.{begin % 10**9:09d}",
                        "--to", f"{end // 10**9}.{end % 10**9:09d}"))
    assert seconds == window
    # From the start of the trace: everything.
    assert folded(ok(*args, "--from", "+0s")) == whole
    # A window before the trace: nothing.
    assert ok(*args, "--from", "0", "--to", "1000") == ""


def test_min_duration_leaves_out_short_call_paths(counts):
    tree = ok(counts.path, "-f", "tree", "--pid", counts.pid, "--min-duration", "1s")
    assert "shorter than 1.000 s not shown" in tree
    assert "__main__:leaf" not in tree
    stacks = folded(ok(counts.path, "-f", "folded", "--pid", counts.pid, "--min-duration", "1ns"))
    assert sum(stacks.values()) == sum(folded(ok(counts.path, "-f", "folded", "--pid",
                                                 counts.pid)).values())


def test_lines_report_counts_line_hits(with_lines):
    text = ok(with_lines.path, "--format", "lines", "--pid", with_lines.pid)
    program = str(with_lines.program)
    hits = {}
    for line in text.splitlines():
        for word in line.split():
            if word.startswith(program + ":"):
                hits[int(word.rsplit(":", 1)[1])] = int(line.split()[0])
    # The loop body (line 4) runs ten times, the loop header (line 3) eleven.
    assert hits[4] == 10, text
    assert hits[3] == 11, text


@pytest.mark.parametrize("format_", ["profile", "tree", "lines", "folded", "chrome", "svg"])
def test_every_format_writes_valid_output(foo_bar_baz, tmp_path, format_):
    output = tmp_path / f"report.{format_}"
    # --min-share 0: the tree leaves out paths under 0.5% of the time by default, and baz
    # may take less than that.
    everything = ["--min-share", "0"] if format_ == "tree" else []
    assert ok(foo_bar_baz.path, "--format", format_, "-o", output, "--pid", foo_bar_baz.pid,
              *everything) == ""
    text = output.read_text()
    assert not list(tmp_path.glob(".report.*")), "the temporary file was left behind"
    if format_ == "profile":
        assert profile_rows(text)["__main__:baz"][0] == 1
    elif format_ == "tree":
        assert "__main__:baz  (1 call" in text
    elif format_ == "lines":
        assert text.startswith("No python:line events"), text  # traced without --lines
    elif format_ == "folded":
        assert FOO_BAR_BAZ_STACKS[3] in folded(text)
    elif format_ == "chrome":
        document = json.loads(text)
        frames = [e for e in document["traceEvents"] if e["ph"] == "X"]
        names = {e["name"] for e in frames}
        assert {"__main__:foo", "__main__:bar", "__main__:baz"} <= names
        assert all(e["pid"] == foo_bar_baz.pid and e["dur"] >= 0 for e in frames)
        assert document["otherData"]["incomplete"] == []
    elif format_ == "svg":
        root = ElementTree.fromstring(text)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        labels = {g.get("data-l") for g in root.iter("{http://www.w3.org/2000/svg}g")}
        assert "__main__:baz" in labels


def test_output_to_a_file_with_awkward_characters(foo_bar_baz, tmp_path):
    output = tmp_path / 'a "quoted", name=x\\y \u00e9\tz.txt'
    ok(foo_bar_baz.path, "-f", "folded", "--pid", foo_bar_baz.pid, "-o", output)
    assert FOO_BAR_BAZ_STACKS[3] in folded(output.read_text())


def test_output_through_a_planted_link_replaces_the_link(foo_bar_baz, tmp_path, local_user):
    """Issue 26: another user plants -o FILE as a link to a file of root's; the report is
    renamed over the link, and the file it named keeps its content."""
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    secret.chmod(0o600)
    planted = local_user.home / "report.txt"
    assert local_user.run("ln", "-s", secret, planted).returncode == 0
    ok(foo_bar_baz.path, "-f", "folded", "--pid", foo_bar_baz.pid, "-o", planted)
    assert secret.read_text() == "root's\n"
    assert not planted.is_symlink()
    assert FOO_BAR_BAZ_STACKS[3] in folded(planted.read_text())
    # /dev/stdout, root's link to the caller's descriptor, is still written through.
    stdout = ok(foo_bar_baz.path, "-f", "folded", "--pid", foo_bar_baz.pid, "-o", "/dev/stdout")
    assert FOO_BAR_BAZ_STACKS[3] in folded(stdout)
    assert Path("/dev/stdout").is_symlink()


# A name in the program below, replaced in the trace's data streams by bytes of the same length
# that are not valid UTF-8 (a stray 0xff, 0xc3 without its continuation), then U+FFFE (no XML
# character) and U+009B (a C1 control, an 8-bit CSI to some terminals).
MARK = b"ZQZQZQZQ"
BAD_NAME = b"\xff\xc3(\xef\xbf\xbe\xc2\x9b"
ESCAPED = r"\xff\xc3(\xef\xbf\xbe\xc2\x9b"

BAD_NAMES_PROGRAM = """\
import threading
import modZQZQZQZQ

def work():
    modZQZQZQZQ.fZQZQZQZQ()

thread = threading.Thread(target=work, name="tZQZQZQZQ")
thread.start()
thread.join()
work()
"""


@pytest.mark.parametrize("format_", ["profile", "tree", "lines", "folded", "chrome", "svg"])
def test_names_that_are_not_utf8_are_escaped_in_every_format(tmp_path, format_):
    """Issue 26: a damaged or hostile trace whose module, function, file, thread and command
    line hold bytes that are not UTF-8: every format is valid UTF-8 (the bytes escaped as
    \\xNN), chrome's JSON loads, the SVG is XML."""
    traced = trace_program(tmp_path, BAD_NAMES_PROGRAM, name="progZQZQZQZQ.py", extra_files={
        # A few ms of work: wide enough for the flame graph, which leaves out frames
        # narrower than it can draw (sum(range(10)) was, on a loaded machine).
        "modZQZQZQZQ.py": "def fZQZQZQZQ():\n    return sum(range(300_000))\n"},
        hook_flags=("--lines",))
    replaced = 0
    for stream in traced.path.rglob("*"):
        if stream.is_file() and stream.name != "metadata":
            data = stream.read_bytes()
            replaced += data.count(MARK)
            stream.write_bytes(data.replace(MARK, BAD_NAME))
    assert replaced >= 4  # the module, the function, the file, the thread's name
    everything = {"profile": ["--limit", "0"], "tree": ["--min-share", "0"],
                  "lines": ["--limit", "0"]}.get(format_, [])
    result = subprocess.run([PYTHON, "-m", "pyust", "report", "-f", format_, "--pid",
                             str(traced.pid), *everything, str(traced.path)],
                            capture_output=True, timeout=120, env=child_env())
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode("utf-8")  # strict
    result.stderr.decode("utf-8")
    if format_ == "chrome":
        names = {e["name"] for e in json.loads(text)["traceEvents"]}
        assert f"mod{ESCAPED}:f{ESCAPED}" in names
        assert "thread_name" in names
    elif format_ == "svg":
        ElementTree.fromstring(result.stdout)
    if format_ != "chrome":
        assert f"mod{ESCAPED}:f{ESCAPED}" in text
    if format_ in ("profile", "tree", "lines"):
        assert f"prog{ESCAPED}.py" in text  # the process's title: its command line


def test_several_traces_at_once(foo_bar_baz, counts):
    # Two processes: without --merge-processes, each stack would start with its process.
    stacks = folded(ok(foo_bar_baz.path, counts.path, "-f", "folded", "--modules", "__main__",
                       "--merge-processes"))
    assert FOO_BAR_BAZ_STACKS[3] in stacks
    assert "__main__:<module>;__main__:top;__main__:mid;__main__:leaf" in stacks
