"""The message-level fuzzer (issue 7): random and hostile histories from
bt_plugin_pyust_fuzz.py (source.pyustfuzz.random) into sink.pyust.report, every format, and
through filter.pyust.stacks. Each run must end with status 0 within LIMIT seconds, its peak
RSS under RSS_LIMIT, and its output well formed (folded lines parse, chrome is JSON, svg is
XML). Seeds are fixed and in the test ids; the marker `stress` adds 200 more seeds.

PYUST_PLUGIN_PATH (or the build under test's src/plugin) names the plugin; with
PYUST_FUZZ_SANITIZE=1 babeltrace2 runs with libasan preloaded (a -Db_sanitize=address,undefined
build) and any sanitizer report fails the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))

from damage_corpus import default_plugin_path, sanitizer_env  # noqa: E402
from lttng_harness import folded  # noqa: E402

HERE = Path(__file__).resolve().parent
LIMIT = 120.0
RSS_LIMIT_MB = 1024
FORMATS = ("profile", "tree", "folded", "lines", "chrome", "svg")


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


def check_output(report_format: str, stdout: bytes) -> None:
    text = stdout.decode("utf-8", "replace")
    if report_format == "folded":
        folded(text)
    elif report_format == "chrome":
        json.loads(text)
    elif report_format == "svg":
        ElementTree.fromstring(stdout)
    else:
        assert text.strip()


def mix(seed: int, events: int = 3000) -> list:
    return ["-p", 'scenario="mix"', "-p", f"seed={seed}", "-p", f"events={events}",
            "-p", "threads=50"]


@pytest.mark.parametrize("report_format", FORMATS)
@pytest.mark.parametrize("seed", range(4))
def test_random_histories(seed, report_format):
    """Seed 3 once gave a C frame without owner or name, an empty frame in folded."""
    stdout, _, _ = run(mix(seed), ["-c", "sink.pyust.report", "-p",
                                   f'format="{report_format}"'])
    check_output(report_format, stdout)


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
        assert "in 10001 threads" in stdout.decode().splitlines()[0]


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
