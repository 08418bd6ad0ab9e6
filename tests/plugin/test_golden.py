"""Golden tests of pyust's babeltrace2 plugin.

Synthetic traces come from bt_plugin_pyust_test.py (source.pyusttest.cases);
each case goes through filter.pyust.stacks or sink.pyust.report and the output
is compared with expect/CASE.FORMAT.expect. Real babeltrace2, every run under a
timeout. Regenerate the expected files after an intended change with
PYUST_UPDATE_GOLDEN=1, then review the diff.

The plugin is pyusttest.environment.plugin_dir()'s: $PYUST_PLUGIN_PATH, else the build
under test's src/plugin (what scripts/setup builds). Run with Debian's interpreter,
which has bt2 and pytest:

    /usr/bin/python3 -m pytest tests/plugin
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from pyusttest.environment import plugin_dir as harness_plugin_dir
from pyusttest.run import run_pyust

HERE = Path(__file__).resolve().parent
EXPECT = HERE / "expect"
TIMEOUT = 20  # seconds for one babeltrace2 run


def plugin_dir():
    found = harness_plugin_dir()
    if found:
        return Path(found)
    pytest.fail("the plugin is not built: run scripts/setup (or meson setup build && ninja -C build)")


def babeltrace2(*args, timeout=TIMEOUT):
    """Runs babeltrace2 with our plugins; returns the CompletedProcess."""
    command = ["babeltrace2", "--plugin-path", "%s:%s" % (HERE, plugin_dir()), *args]
    env = dict(os.environ, TZ="UTC", LC_ALL="C")
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def flat(text):
    """babeltrace2 wraps its error causes: join the lines back."""
    return " ".join(text.split())


def run_case(case, *components):
    return babeltrace2("-c", "source.pyusttest.cases", "-p", 'case="%s"' % case, *components)


def report(case, fmt, *params):
    args = ["-c", "sink.pyust.report", "-p", "format=%s" % fmt]
    for param in params:
        args += ["-p", param]
    return run_case(case, *args)


def ok(result):
    """The standard output of a babeltrace2 run that must succeed."""
    assert result.returncode == 0, result.stderr
    return result.stdout


def check_golden(name, result):
    assert result.returncode == 0, result.stderr
    text = result.stdout
    if result.stderr:
        text += "--- stderr ---\n" + result.stderr
    path = EXPECT / (name + ".expect")
    if os.environ.get("PYUST_UPDATE_GOLDEN"):
        EXPECT.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), "no expected output: run with PYUST_UPDATE_GOLDEN=1 and review"
    assert text == path.read_text()


CASES = ["nested", "recursion", "exception", "generator", "two_threads", "mid_call",
         "lost_events", "lines", "names"]
FORMATS = ["profile", "tree", "folded", "chrome"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_report(case, fmt):
    check_golden("%s.%s" % (case, fmt), report(case, fmt))


def test_lines():
    check_golden("lines.lines", report("lines", "lines"))


def test_names_lines():
    """The lines report names files as the profile does (the placeholder of an empty one)."""
    check_golden("names.lines", report("names", "lines"))


@pytest.mark.parametrize("case", ["names", "mid_call"])
def test_one_name_everywhere(case):
    """folded, svg, chrome, profile and filter.pyust.stacks name the same code the same way
    (unregistered code was ?:fact in folded and <unknown 0x...> in the stacks filter)."""
    folded = ok(report(case, "folded"))
    frames = {frame for line in folded.splitlines() if not line.startswith(("---", " "))
              and line.strip() and line != "Incomplete:"
              for frame in line.rsplit(" ", 1)[0].split(";")}
    assert frames, folded
    svg = ET.fromstring(ok(report(case, "svg")))
    assert frames <= {g.get("data-l") for g in svg.iter("{http://www.w3.org/2000/svg}g")}
    chrome = json.loads(ok(report(case, "chrome")))
    assert frames == {e["name"] for e in chrome["traceEvents"] if e["ph"] == "X"}
    profile = ok(report(case, "profile"))
    assert all("  %s  " % frame in profile for frame in frames)
    stacks = ok(run_case(case, "-c", "filter.pyust.stacks"))
    shown = {frame for value in re.findall(r'stack = "([^"]*)"', stacks)
             for frame in value.replace("\\?", "?").split(";") if value and value != "<unmatched>"}
    assert shown == frames, (shown, frames)


@pytest.mark.parametrize("case", CASES)
def test_stacks_filter(case):
    check_golden("%s.stacks" % case, run_case(case, "-c", "filter.pyust.stacks"))


@pytest.mark.parametrize("case", CASES)
def test_filter_forwards_everything(case):
    """With the filter in front, the sink sees the same trace: same report."""
    direct = ok(report(case, "folded"))
    filtered = ok(run_case(case, "-c", "filter.pyust.stacks", "-c", "sink.pyust.report",
                           "-p", "format=folded"))
    assert direct and filtered == direct


def test_filter_keeps_original_events():
    plain = ok(run_case("nested")).splitlines()
    filtered = ok(run_case("nested", "-c", "filter.pyust.stacks")).splitlines()
    kept = [line for line in filtered if "pyust:stack" not in line]
    # The filter adds its stack events (one a call or return) and keeps every original one.
    assert len(filtered) > len(kept) and any("python:call" in line for line in plain)
    # The time deltas of the original lines differ (a stack event comes between): drop them.
    strip = re.compile(r"\(\+[0-9.?]+\) ")
    assert [strip.sub("", l) for l in kept] == [strip.sub("", l) for l in plain]


def test_thread_selection():
    check_golden("two_threads.tid101.folded", report("two_threads", "folded", "tid=101"))
    # A selection that matches nothing is an error that lists what the trace holds.
    other = report("two_threads", "folded", "pid=1")
    assert other.returncode != 0 and other.stdout == ""
    assert "No event matches pid=1: the" in other.stderr
    assert "pid 100 (python3 app.py) with threads 100, 101" in " ".join(other.stderr.split())


def test_window_clips_frames():
    check_golden("nested.window.tree", report("nested", "tree", "begin=2500", "end=8500"))


def test_min_duration():
    check_golden("nested.min.tree", report("nested", "tree", "min-duration=2000"))
    folded = ok(report("nested", "folded", "min-duration=2000"))
    total = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines())
    assert total == 11000  # what is cut goes to the parent: the sum stays the traced time


def test_self_times_add_up_to_frame_time():
    for case in CASES:
        folded = ok(report(case, "folded"))
        tree = ok(report(case, "tree"))
        total = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines())
        in_frames = 0
        threads = 0
        for line in tree.splitlines():
            if line.startswith("pid "):  # a thread's title: "...: N events, T in frames"
                threads += 1
                match = re.search(r"events, ([0-9.]+) (ns|us) in frames$", line)
                assert match, line
                in_frames += float(match.group(1)) * (1000 if match.group(2) == "us" else 1)
        assert threads and total > 0, (case, tree)
        assert total == round(in_frames), case


def test_chrome_is_valid_json():
    data = json.loads(ok(report("two_threads", "chrome")))
    names = {(e["name"], e["args"]["name"]) for e in data["traceEvents"] if e["ph"] == "M"}
    assert names == {("thread_name", "MainThread"), ("thread_name", "Worker-1"),
                     ("process_name", "pid 100 (python3 app.py)")}
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == 6 and all(e["dur"] >= 0 for e in spans)


def test_svg_flame_graph(tmp_path):
    out = tmp_path / "flame.svg"
    result = report("two_threads", "svg", 'output="%s"' % out)
    assert result.returncode == 0, result.stderr
    root = ET.parse(out).getroot()
    ns = {"s": "http://www.w3.org/2000/svg"}
    labels = [g.get("data-l") for g in root.iterfind(".//s:g[@class='f']", ns)]
    assert labels[0] == "all"
    assert "pid 100 (python3 app.py) tid 101 (Worker-1)" in labels
    assert labels.count("pkg.mod:Bar.run") == 2
    assert root.find("s:script", ns) is not None
    assert out.stat().st_size < 20000


def test_output_file(tmp_path):
    out = tmp_path / "profile.txt"
    result = report("nested", "profile", 'output="%s"' % out)
    assert result.returncode == 0 and result.stdout == ""
    assert out.read_text() == (EXPECT / "nested.profile.expect").read_text()


def test_output_through_a_link_replaces_the_link(tmp_path):
    """Issue 26: the sink writes a new file beside output and renames it over the path: a link
    planted there is replaced, its target untouched; a link to a device is refused."""
    target = tmp_path / "target"
    target.write_text("kept\n")
    link = tmp_path / "profile.txt"
    link.symlink_to(target)
    result = report("nested", "profile", 'output="%s"' % link)
    assert result.returncode == 0, result.stderr
    assert target.read_text() == "kept\n"
    assert not link.is_symlink()
    assert link.read_text() == (EXPECT / "nested.profile.expect").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.txt", "target"]
    (tmp_path / "null").symlink_to("/dev/null")
    result = report("nested", "profile", 'output="%s"' % (tmp_path / "null"))
    assert result.returncode != 0
    assert "a symbolic link to a device or pipe" in flat(result.stderr)
    assert (tmp_path / "null").is_symlink()


@pytest.mark.parametrize("param, message", [
    ("format=bogus", "bad parameter value: name=format, value=bogus"),
    ("colour=1", "unknown parameter: name=colour"),
    ("pid=\"x\"", "bad parameter type: name=pid, expected=integer"),
    ("min-duration=-1", "bad parameter value: name=min-duration"),
    ('output="/nonexistent/dir/x"', "Cannot open the output file: path=/nonexistent/dir/x"),
])
def test_bad_parameter(param, message):
    result = run_case("nested", "-c", "sink.pyust.report", "-p", param)
    assert result.returncode != 0
    error = flat(result.stderr)
    assert "Cannot initialize sink.pyust.report" in error
    assert message in error


def test_filter_takes_no_parameter():
    result = run_case("nested", "-c", "filter.pyust.stacks", "-p", "depth=1")
    assert result.returncode != 0
    assert "unknown parameter: name=depth" in flat(result.stderr)


def test_not_a_trace(tmp_path, real_trace):
    """A directory without a trace is refused by babeltrace2 before the sink sees anything:
    its own line names the input; the same command reports on a trace."""
    (tmp_path / "junk").write_text("not a trace\n")
    result = babeltrace2(str(tmp_path), "-c", "sink.pyust.report", timeout=10)
    assert (result.returncode, result.stdout) == (1, "")
    assert "No trace was found based on input `%s`." % tmp_path in result.stderr
    assert "No source component." in result.stderr
    assert ok(babeltrace2(str(real_trace), "-c", "sink.pyust.report", timeout=60))


# End to end: a real LTTng trace of a fixed program.
PROGRAM = """\
def baz(n):
    s = 0
    for i in range(n):
        s += i
    return s

def bar(n):
    return baz(n) + baz(n // 2)

def foo():
    t = 0
    for _ in range(3):
        t += bar(1000)
    return t

foo()
"""


@pytest.fixture(scope="module")
def real_trace():
    work = Path(tempfile.mkdtemp(prefix="pyust-golden-"))
    (work / "fbb.py").write_text(PROGRAM)
    # The interpreter under test and its pyust, as every suite (pyusttest.environment).
    result = run_pyust(["run", "-o", str(work / "trace"), "--", "fbb.py"], cwd=work)
    assert result.returncode == 0, "pyust run failed: " + result.stderr[-500:]
    yield work / "trace"
    shutil.rmtree(work, ignore_errors=True)


def test_real_trace_folded(real_trace):
    # Other programs of the machine may be in the trace: merged, no stack starts with its
    # process.
    result = babeltrace2(str(real_trace), "-c", "sink.pyust.report", "-p", "format=folded",
                         "-p", "merge-processes=yes")
    assert result.returncode == 0, result.stderr
    paths = {line.rsplit(" ", 1)[0] for line in result.stdout.splitlines()}
    mine = sorted(p for p in paths if p.startswith("__main__:"))
    assert mine == [
        "__main__:<module>",
        "__main__:<module>;__main__:foo",
        "__main__:<module>;__main__:foo;__main__:bar",
        "__main__:<module>;__main__:foo;__main__:bar;__main__:baz",
    ]


def test_real_trace_profile_counts(real_trace):
    result = babeltrace2(str(real_trace), "-c", "sink.pyust.report")
    assert result.returncode == 0, result.stderr
    calls = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].isdigit():
            calls[fields[4]] = int(fields[0])
    assert calls["__main__:baz"] == 6
    assert calls["__main__:bar"] == 3
    assert calls["__main__:foo"] == 1
    assert calls["__main__:<module>"] == 1
    # No assertion on the "Incomplete:" section: the hook's own activation frame may show as a
    # return without a call at the start and a frame open at the end (true of the trace).


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
