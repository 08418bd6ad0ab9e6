"""Peak memory of sink.pyust.report against the length of the trace (issue 7).

Streams N synthetic python:call/return events (source.pyustfuzz.random, scenario bench:
THREADS threads each calling down DEPTH levels and back, round robin; no disk) into
sink.pyust.report and prints the peak RSS of the babeltrace2 process for each N and
format. The analysis keeps threads x call paths, never the events: the RSS must stay flat
as N grows.

    /usr/bin/python3 tests/bench/report_memory.py --events 1e5,1e6,1e7 [--formats profile,folded]
        [--plugin-path BUILD/src/plugin] [--threads 8] [--depth 10]

The source is Python (bt2): about 20,000 events/s on a loaded 2-core machine, so 1e7 takes
minutes and 1e8 hours; the figure that matters is the RSS, which the source's speed does
not change.

For real traces up to 1e8 events, --record records the call-heavy workload W1
(tests/bench/workloads.py) with `pyust run --fast` at each scale (scale 5.8 makes about 1e8
call and return events, some 300 MB of trace) and measures `pyust report` on each trace, the
whole pipeline: the LTTng source, filter.pyust.expand and sink.pyust.report. Nothing else may
record in the machine's session daemon meanwhile.

    /usr/bin/python3 tests/bench/report_memory.py --record 0.058,0.58,5.8 [--formats profile,folded]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def wait_rss(command: list, env: dict | None = None) -> tuple:
    """(seconds, peak RSS in KiB of the command or any child it waited for, its stderr)."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    error = child.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(child.pid, 0)
    child.stderr.close()
    seconds = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command[:4]} failed: {error[-2000:]}")
    return seconds, usage.ru_maxrss, error


def measure(events: int, report_format: str, plugin_path: str, threads: int,
            depth: int) -> tuple:
    """(seconds, peak RSS in KiB) of one babeltrace2 run."""
    command = ["babeltrace2", "--plugin-path", f"{ROOT / 'tests' / 'plugin'}:{plugin_path}",
               "-c", "source.pyustfuzz.random", "-p", 'scenario="bench"',
               "-p", f"events={events}", "-p", f"threads={threads}", "-p", f"depth={depth}",
               "-c", "sink.pyust.report", "-p", f'format="{report_format}"']
    seconds, rss, _ = wait_rss(command)
    return seconds, rss


def record_w1(scale: float, directory: Path) -> tuple:
    """Record W1 at SCALE in fast mode into DIRECTORY/trace: (trace, events, discarded)."""
    script = directory / "w1.py"
    script.write_text("import sys\n"
                      f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
                      "import workloads\n"
                      "workloads.WORKLOADS['W1'](float(sys.argv[1]))\n")
    trace = directory / "trace"
    _, _, summary = wait_rss([sys.executable, "-m", "pyust", "run", "--fast",
                              "--subbuf-size", "8M", "--num-subbuf", "16", "-o", str(trace),
                              "--", str(script), str(scale)])
    found = re.search(r"(\d+) events recorded, (\d+) discarded", summary)
    if not found:
        raise RuntimeError(f"no event count in pyust run's summary: {summary[-2000:]}")
    return trace, int(found.group(1)), int(found.group(2))


def record_and_report(scales: list, formats: list, plugin_path: str) -> None:
    print(f"{'scale':>6} {'events':>11} {'discarded':>9} {'trace MB':>8} {'format':8} "
          f"{'seconds':>8} {'events/s':>9} {'peak RSS':>10}")
    for scale in scales:
        with tempfile.TemporaryDirectory(prefix="pyust-memory-") as directory:
            trace, events, discarded = record_w1(scale, Path(directory))
            size = sum(f.stat().st_size for f in trace.rglob("*") if f.is_file())
            # The report with the plugin of --plugin-path (the build's by default).
            env = dict(os.environ, PYUST_PLUGIN_PATH=plugin_path)
            for report_format in formats:
                seconds, rss, _ = wait_rss([sys.executable, "-m", "pyust", "report",
                                            "--format", report_format, "--timeout", "0",
                                            "-o", os.devnull, str(trace)], env=env)
                print(f"{scale:>6} {events:>11} {discarded:>9} {size / 1e6:8.0f} "
                      f"{report_format:8} {seconds:8.1f} {events / seconds:9.0f} "
                      f"{rss / 1024:8.1f} MB", flush=True)


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", default="1e5,1e6,1e7",
                        help="comma-separated event counts (1e6 is read as 1000000)")
    parser.add_argument("--formats", default="profile,folded")
    parser.add_argument("--plugin-path", default=str(ROOT / "build" / "src" / "plugin"))
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--record", metavar="SCALES",
                        help="comma-separated W1 scales: record real fast-mode traces and "
                             "measure pyust report on them instead of the synthetic source")
    args = parser.parse_args(argv)
    if args.record:
        if shutil.which("lttng") is None:
            parser.error("--record needs LTTng (lttng on PATH)")
        record_and_report([float(s) for s in args.record.split(",")], args.formats.split(","),
                          args.plugin_path)
        return 0
    print(f"{'events':>12} {'format':8} {'seconds':>9} {'events/s':>10} {'peak RSS':>10}")
    for count in (int(float(n)) for n in args.events.split(",")):
        for report_format in args.formats.split(","):
            seconds, rss = measure(count, report_format, args.plugin_path, args.threads,
                                   args.depth)
            print(f"{count:>12} {report_format:8} {seconds:9.1f} {count / seconds:10.0f} "
                  f"{rss / 1024:8.1f} MB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
