"""overhead.py --suite, at a tiny scale: the benchmark doc/performance.md's figures
come from still runs end to end against a real session daemon, W2 makes
the line events it claims, every target of issue 6 gets its row, and a peer
that the interpreter cannot import is skipped with the reason.

The timings of such a run mean nothing (scale 0.01, one round, other tests
running): nothing here asserts a ratio.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pyusttest.environment import PYTHON, PYUST_PATH, python_version

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import targets  # noqa: E402
import workloads  # noqa: E402

SCALE = 0.01
MODES = ("untraced", "pyust-dormant", "pyust-fast", "pyust-fast-lines", "pyust-lines",
         "line-profiler", "viztracer")


def test_suite_runs_every_workload_and_judges_the_targets(tmp_path):
    report = tmp_path / "suite.json"
    traces = tmp_path / "traces"
    traces.mkdir()
    done = subprocess.run(
        [sys.executable, str(HERE / "overhead.py"), "--suite", "--rounds", "1", "--scale",
         str(SCALE), "--modes", ",".join(MODES), "--python", PYTHON, "--pyust-path", PYUST_PATH,
         "--wait-quiet", "0", "--trace-dir", str(traces), "--json", str(report)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    document = json.loads(report.read_text())
    ran = {(r["workload"], r["mode"]) for r in document["runs"]}
    skipped = document["config"]["skipped_modes"]

    # Every workload ran; the standard mode with lines skips W1 only.
    for workload in ("W1", "W2", "W3"):
        assert (workload, "untraced") in ran and (workload, "pyust-fast-lines") in ran
    assert ("W1", "pyust-lines") not in ran and ("W2", "pyust-lines") in ran

    # W2: 4 line events per iteration, plus the few events of its call.
    line_events = document["w2_line_events"]
    expected = 4 * int(workloads.W2_ITERATIONS * SCALE)
    assert line_events["expected"] == expected
    for mode in ("pyust-lines", "pyust-fast-lines"):
        assert expected <= line_events["emitted"][mode] < expected + 100

    # One row per target; judged on 3.11 only, and then for every mode that ran.
    verdicts = document["targets"]
    assert [(v["workload"], v["mode"], v["measure"]) for v in verdicts] == [
        (workload, mode, measure) for _, workload, mode, measure, _ in targets.TARGETS]
    is_judged = python_version(PYTHON)[:2] == targets.VERSION
    for verdict in verdicts:
        if verdict["mode"] not in MODES:
            assert verdict["value"] is None and verdict["why"] == "not run"
        elif is_judged and not (verdict["measure"] == "bytes_per_event"
                                and "discarded" in verdict.get("why", "")):
            assert verdict["passed"] in (True, False), verdict
        else:
            assert verdict["passed"] is None and verdict["why"], verdict
    assert "Suite targets" in done.stdout

    # A peer runs on every workload, or is skipped with why, and says so.
    for peer in ("line-profiler", "viztracer"):
        if peer in skipped:
            assert PYTHON in skipped[peer]
            assert f"skipping {peer}: " in done.stdout
            assert not any(mode == peer for _, mode in ran)
        else:
            assert {(w, peer) for w in ("W1", "W2", "W3")} <= ran

    # The sessions' traces went with them.
    assert list(traces.iterdir()) == []
