"""Issue 6's targets for overhead.py's suite, and their PASS/FAIL verdicts.

The targets hold on CPython 3.11 (the setprofile back end); on 3.12+
(sys.monitoring) overhead.py prints the same rows with their values and no
verdict. A ratio is the mode's median wall time over the untraced median of
the same run; a trace size is the trace's bytes (the whole session directory)
over the events pyust emitted, which in fast mode are the records of its
batches.
"""

from __future__ import annotations

import sys

# The version the targets are for.
VERSION = (3, 11)
# (what, workload, mode, measure, limit); measure is a key of overhead.py's
# summary row of that workload and mode.
TARGETS = (
    ("fast mode", "W1", "pyust-fast", "ratio", 3.5),
    ("fast mode", "W3", "pyust-fast", "ratio", 1.45),
    ("fast mode with lines", "W2", "pyust-fast-lines", "ratio", 3.0),
    ("standard mode", "W3", "pyust", "ratio", 1.8),
    ("dormant", "W1", "pyust-dormant", "ratio", 1.03),
    ("dormant", "W2", "pyust-dormant", "ratio", 1.03),
    ("dormant", "W3", "pyust-dormant", "ratio", 1.03),
    ("fast mode trace size", "W1", "pyust-fast", "bytes_per_event", 9.0),
    ("fast mode trace size", "W3", "pyust-fast", "bytes_per_event", 9.0),
    ("fast mode trace size", "W2", "pyust-fast-lines", "bytes_per_event", 9.0),
)


def ratio_text(value) -> str:
    """A ratio as the tables print it ("-" when there is none)."""
    return "-" if value is None else f"{value:.2f}x"


def judge(summary: dict, version: tuple) -> list:
    """Every target against overhead.py's summary: one dict each, with the
    value, the limit and "passed": True or False, or None with a "why" when
    it is not judged (another Python version, the mode did not run, or LTTng
    discarded events, which makes a trace look smaller than it is)."""
    verdicts = []
    for what, workload, mode, measure, limit in TARGETS:
        verdict = {"what": what, "workload": workload, "mode": mode, "measure": measure,
                   "limit": limit, "value": None, "passed": None}
        verdicts.append(verdict)
        row = summary.get(workload, {}).get("modes", {}).get(mode)
        if row is None or row.get(measure) is None:
            verdict["why"] = "not run"
            continue
        verdict["value"] = row[measure]
        if measure == "ratio":
            verdict["paired_ratio"] = row.get("paired_ratio")
            verdict["cpu_ratio"] = row.get("cpu_ratio")
        if version != VERSION:
            verdict["why"] = (f"no target on {version[0]}.{version[1]}: the suite's are for "
                              f"{VERSION[0]}.{VERSION[1]}")
        elif measure == "bytes_per_event" and row.get("discarded_total"):
            verdict["why"] = "LTTng discarded events: the trace is incomplete"
        else:
            verdict["passed"] = verdict["value"] <= limit
    return verdicts


def print_verdicts(verdicts: list, labels: dict, stream=sys.stdout) -> None:
    """The table of judge()'s verdicts; labels name overhead.py's modes."""
    print("\nSuite targets (ratio: median wall time / untraced median, with the paired and "
          "cpu estimators;\n  trace size: trace bytes / events emitted, records in fast mode):",
          file=stream)
    for v in verdicts:
        if v["value"] is None:
            value = "-"
        elif v["measure"] == "ratio":
            value = (f"{v['value']:.2f}x (paired {ratio_text(v.get('paired_ratio'))}, "
                     f"cpu {ratio_text(v.get('cpu_ratio'))})")
        else:
            value = f"{v['value']:.2f} B/event"
        limit = f"{v['limit']:.2f}x" if v["measure"] == "ratio" else f"{v['limit']:.1f} B"
        outcome = {True: "PASS", False: "FAIL"}.get(v["passed"], f"-- ({v.get('why')})")
        print(f"  {v['workload']} {v['what']:21} {labels[v['mode']]:24} <= {limit:6} "
              f"{value:36} {outcome}", file=stream)
