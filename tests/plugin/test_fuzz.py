"""The message-level fuzzer (issue 7): random and hostile histories from
bt_plugin_pyust_fuzz.py (source.pyustfuzz.random) into sink.pyust.report, every format, and
through filter.pyust.stacks. Each run must end with status 0 within LIMIT seconds, its peak
RSS under RSS_LIMIT, and its output well formed (folded lines parse, chrome is JSON with spans,
svg is XML; profile, tree and lines hold their own lines only, every name escaped, and
profile's title counts its rows and their calls). Seeds are fixed and in the test ids; the
marker `stress` adds 200 more seeds.

PYUST_PLUGIN_PATH (or the build under test's src/plugin) names the plugin; with
PYUST_FUZZ_SANITIZE=1 babeltrace2 runs with libasan preloaded (a -Db_sanitize=address,undefined
build) and any sanitizer report fails the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from pyusttest.damage_corpus import default_plugin_path, sanitizer_env
from pyusttest.traces import folded

HERE = Path(__file__).resolve().parent
LIMIT = 120.0
RSS_LIMIT_MB = 1024
FORMATS = ("profile", "tree", "folded", "lines", "chrome", "svg", "tasks")


def run(source_params: list, sink: list, *, stacks: bool = False):
    plugin = default_plugin_path()
    env = dict(os.environ)
    if os.environ.get("PYUST_FUZZ_SANITIZE") == "1":
        env.update(sanitizer_env(plugin))
    command = ["babeltrace2", "--plugin-path", f"{HERE}:{plugin}", "-c",
               "source.pyustfuzz.random", *source_params]
    if stacks:
        command += ["-c", "filter.pyust.stacks"]
    command += sink
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        stdout, stderr = child.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail(f"no answer within {LIMIT:g} s: {command}")
    seconds = time.monotonic() - start
    stderr = stderr.decode("utf-8", "replace")
    assert child.returncode == 0, stderr[-3000:]
    for mark in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert mark not in stderr, stderr[-4000:]
    return stdout, stderr, seconds


def peak_rss_mb(source_params: list, sink: list) -> float:
    """The peak RSS of a run of babeltrace2, in MB, as GNU time measures it (the rusage of a
    child forked from pytest itself would count pytest's own RSS, which Linux keeps across
    exec)."""
    if os.environ.get("PYUST_FUZZ_SANITIZE") == "1":
        pytest.skip("RSS under AddressSanitizer measures its shadow memory, not the plugin's")
    plugin = default_plugin_path()
    command = ["/usr/bin/time", "-f", "peak-rss-kb=%M", "babeltrace2", "--plugin-path",
               f"{HERE}:{plugin}", "-c", "source.pyustfuzz.random", *source_params, *sink]
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            timeout=LIMIT)
    errors = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, errors[-3000:]
    return int(errors.rsplit("peak-rss-kb=", 1)[1]) / 1024


# The lines of the text formats (names escaped: no control character in them).
DURATION = r"[0-9.]+ (ns|us|ms|s)"
PROFILE_TITLE = re.compile(r"pid \d+ \(python3\): (\d+) calls of (\d+) functions in (\d+) "
                           rf"threads?, {DURATION} of self time")
PROFILE_ROW = re.compile(r" *(\d+) +[0-9.]+ +[0-9.]+ +[0-9.]+  .+")
TREE_TITLE = re.compile(rf"pid \d+ \(python3\) tid \d+( \(.*\))?: \d+ events?, {DURATION} in frames")
TREE_ROW = re.compile(rf"(  )+{DURATION}  .*  \((\d+ calls?|resumed), self {DURATION}\)")
LINES_ROW = re.compile(r" *\d+ +[0-9.]+ +[0-9.]+  .*:\d+  \(.*\)")
TASKS_LINES = [re.compile(pattern) for pattern in (
    rf"pid \d+ \(python3\) tid \d+( \(.*\))?: (no asyncio task, {DURATION} in frames|[\d,]+ "
    rf"asyncio tasks?, running {DURATION}; {DURATION} in frames outside them)",
    r"         wall    to start     running    awaiting   steps  end        task",
    rf" +{DURATION} +{DURATION} +{DURATION} +{DURATION} +[\d,]+  (returned|raised|cancelled"
    r"|not ended) +.+",
    r"task .+: created (by .+|outside tasks)( in .+)?",
    rf"  (wall    |to start|running |awaiting) +{DURATION}  .+",
    rf"outside tasks: {DURATION} in frames", "")]
INCOMPLETE_ROW = re.compile(r"  (pid \d+ \(python3\) tid \d+( \(.*\))?|stream \S+): \S.*")
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def check_output(report_format: str, stdout: bytes) -> None:
    """The report is well formed: folded lines parse, chrome is JSON with its spans, svg is
    XML; profile, tree and lines are made of their own lines only (titles, rows, an
    Incomplete: section) and profile's title counts its rows and their calls."""
    text = stdout.decode("utf-8", "replace")
    if report_format == "folded":
        assert folded(text)
    elif report_format == "chrome":
        spans = [e for e in json.loads(text)["traceEvents"] if e["ph"] == "X"]
        assert spans and all(e["dur"] >= 0 for e in spans)
    elif report_format == "svg":
        ElementTree.fromstring(stdout)
    else:
        check_text_report(report_format, text)


def check_text_report(report_format: str, text: str) -> None:
    lines = text.splitlines()
    assert lines, "no output"
    body, _, incomplete = text.partition("\n\nIncomplete:\n")
    for line in incomplete.splitlines():
        assert INCOMPLETE_ROW.fullmatch(line), line[:300]
    lines = body.splitlines()
    for line in lines:
        assert not CONTROL.search(line), line[:300]
    if report_format == "profile":
        title = PROFILE_TITLE.fullmatch(lines[0])
        assert title and lines[1:3] == [
            "", "   ncalls      self_ms     total_ms      mean_us  function (file:line)"], lines[:3]
        rows = [PROFILE_ROW.fullmatch(line) for line in lines[3:]]
        assert all(rows), [line[:300] for line in lines[3:] if not PROFILE_ROW.fullmatch(line)]
        assert (sum(int(row.group(1)) for row in rows), len(rows)) == \
            (int(title.group(1)), int(title.group(2)))
    elif report_format == "tree":
        assert TREE_TITLE.fullmatch(lines[0]), lines[0][:300]
        for line in lines:
            assert TREE_TITLE.fullmatch(line) or TREE_ROW.fullmatch(line), line[:300]
    elif report_format == "tasks":
        assert TASKS_LINES[0].fullmatch(lines[0]), lines[0][:300]
        for line in lines:
            assert TREE_ROW.fullmatch(line) or any(p.fullmatch(line) for p in TASKS_LINES), \
                line[:300]
    else:
        assert lines[:3] == ["pid 4242 (python3):", "",
                             "     hits     total_ms      mean_us  file:line (function)"], lines[:3]
        for line in lines[3:]:
            assert LINES_ROW.fullmatch(line), line[:300]


def mix(seed: int, events: int = 3000, tasks: bool = False) -> list:
    return ["-p", 'scenario="mix"', "-p", f"seed={seed}", "-p", f"events={events}",
            "-p", "threads=50", "-p", f"tasks={int(tasks)}"]


@pytest.mark.parametrize("report_format", FORMATS)
@pytest.mark.parametrize("seed", range(4))
def test_random_histories(seed, report_format):
    """Seed 3 once gave a C frame without owner or name, an empty frame in folded."""
    stdout, _, _ = run(mix(seed), ["-c", "sink.pyust.report", "-p",
                                   f'format="{report_format}"'])
    check_output(report_format, stdout)


@pytest.mark.parametrize("report_format", FORMATS)
@pytest.mark.parametrize("seed", range(2))
def test_random_histories_with_tasks(seed, report_format):
    """asyncio tasks named, stepped (any resumed count, any await) and ended anywhere, under a
    few keys, on any thread: every format well formed."""
    stdout, _, _ = run(mix(seed, tasks=True), ["-c", "sink.pyust.report", "-p",
                                               f'format="{report_format}"'])
    check_output(report_format, stdout)


@pytest.mark.parametrize("report_format", ["tree", "folded", "svg"])
def test_random_histories_with_tasks_under_their_creators(report_format):
    """--tasks (tasks=yes) on such histories: well formed, and folded's total is the same as
    without it (it was not, before the model kept a step's frames its task's whatever came
    before its root)."""
    sink = ["-c", "sink.pyust.report", "-p", f'format="{report_format}"']
    stdout, _, _ = run(mix(5, tasks=True), [*sink, "-p", "tasks=yes"])
    check_output(report_format, stdout)
    if report_format == "folded":
        plain, _, _ = run(mix(5, tasks=True), sink)
        assert sum(folded(stdout.decode()).values()) == sum(folded(plain.decode()).values())


@pytest.mark.parametrize("seed", range(4))
def test_random_histories_through_the_stacks_filter(seed):
    stdout, _, _ = run(mix(seed), ["-c", "sink.pyust.report", "-p", 'format="folded"'],
                       stacks=True)
    folded(stdout.decode("utf-8", "replace"))
    run(mix(seed), ["-c", "sink.text.details"], stacks=True)


@pytest.mark.stress
@pytest.mark.parametrize("seed", range(4, 204))
def test_random_histories_stress(seed):
    for report_format in FORMATS:
        stdout, _, _ = run(mix(seed, events=20000), ["-c", "sink.pyust.report", "-p",
                                                     f'format="{report_format}"'])
        check_output(report_format, stdout)


@pytest.mark.parametrize("report_format", ["profile", "folded", "chrome"])
def test_ten_thousand_threads(report_format):
    stdout, _, _ = run(["-p", 'scenario="threads"', "-p", "threads=10000"],
                       ["-c", "sink.pyust.report", "-p", f'format="{report_format}"'])
    check_output(report_format, stdout)
    if report_format == "profile":
        # outer and inner once in each worker; the thread that named them counts too.
        assert stdout.decode().startswith("pid 4242 (python3): 20000 calls of 2 functions in "
                                          "10001 threads, ")


@pytest.mark.parametrize("report_format", [
    "profile", pytest.param("chrome", marks=pytest.mark.stress),
    pytest.param("svg", marks=pytest.mark.stress), "folded"])
def test_deep_stack(report_format):
    """100,000 nested calls (folded: 10,000, whose output alone is ~600 MB at 100,000); chrome
    and svg (30 s each: the Python source is slow) under the stress marker."""
    depth = 10000 if report_format == "folded" else 100000
    stdout, _, _ = run(["-p", 'scenario="deep"', "-p", f"depth={depth}"],
                       ["-c", "sink.pyust.report", "-p", f'format="{report_format}"'])
    check_output(report_format, stdout)
    if report_format == "profile":
        assert stdout.decode().startswith(f"pid 4242 (python3): {depth} calls of 8 functions "
                                          "in 1 thread, ")
    elif report_format == "folded":
        # f0;f1;...: one stack per depth, the deepest as long as the history.
        stacks = folded(stdout.decode())
        assert len(stacks) == depth and max(s.count(";") for s in stacks) == depth - 1


def test_memory_does_not_grow_with_depth_in_folded():
    """folded used to keep every path's text: O(depth^2) memory."""
    sink = ["-c", "sink.pyust.report", "-p", 'format="folded"']
    small = peak_rss_mb(["-p", 'scenario="deep"', "-p", "depth=2000"], sink)
    large = peak_rss_mb(["-p", 'scenario="deep"', "-p", "depth=10000"], sink)
    assert large < small + 30, (small, large)


def test_memory_bounded_with_megabyte_names():
    rss = peak_rss_mb(mix(1, events=3000), ["-c", "sink.pyust.report", "-p",
                                             'format="folded"'])
    assert rss < RSS_LIMIT_MB, rss
