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
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def measure(events: int, report_format: str, plugin_path: str, threads: int,
            depth: int) -> tuple:
    """(seconds, peak RSS in KiB) of one babeltrace2 run."""
    command = ["babeltrace2", "--plugin-path", f"{ROOT / 'tests' / 'plugin'}:{plugin_path}",
               "-c", "source.pyustfuzz.random", "-p", 'scenario="bench"',
               "-p", f"events={events}", "-p", f"threads={threads}", "-p", f"depth={depth}",
               "-c", "sink.pyust.report", "-p", f'format="{report_format}"']
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - start
    error = child.stderr.read().decode("utf-8", "replace")
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"babeltrace2 failed: {error[-2000:]}")
    return seconds, usage.ru_maxrss


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", default="1e5,1e6,1e7",
                        help="comma-separated event counts (1e6 is read as 1000000)")
    parser.add_argument("--formats", default="profile,folded")
    parser.add_argument("--plugin-path", default=str(ROOT / "build" / "src" / "plugin"))
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--depth", type=int, default=10)
    args = parser.parse_args(argv)
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
