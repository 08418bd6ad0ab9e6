#!/usr/bin/env python3
"""How fast pyust's babeltrace2 components read a trace, and in how much memory.

    python3 tests/bench/report_speed.py [--events N[,N...]] [--rounds R] [--keep DIR]
                                        [--trace-formats ctf-1.8,ctf-2]

For each size (and each trace format asked for: LTTng 2.15 and later write CTF
2 or CTF 1.8) it records a trace of about N events with `pyust run` (a
recursive call-heavy program), then runs, interleaved, R rounds of:

  dummy    babeltrace2 TRACE -c sink.utils.dummy             (babeltrace2's floor)
  report   babeltrace2 TRACE -c sink.pyust.report -p format=profile
  folded   babeltrace2 TRACE -c sink.pyust.report -p format=folded
  stacks   babeltrace2 TRACE -c filter.pyust.stacks -c sink.utils.dummy

and prints, per size and mode, the median wall and CPU time, events per second,
the ratio to dummy's events per second, and the peak RSS (each run is a child
process; wait4 gives its own maximum resident set). Target of issue 4: the
stack sinks at no less than half dummy's events per second; peak memory that
does not grow with the trace's length. Target of issue 13: the report on a CTF 2
trace at no less than 90% of its events per second on a CTF 1.8 trace of the
same program (the `vs 1st` column: the ratio to the first format's rate).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

PROGRAM = """\
import sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
calls = int(sys.argv[1])
n = 1
while True:  # fib(n) makes fib(n+1)*2-1 calls: pick the n that reaches the target
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    if 2 * a - 1 >= calls:
        break
    n += 1
fib(n)
"""

MODES = {
    "dummy": ["-c", "sink.utils.dummy"],
    "report": ["-c", "sink.pyust.report", "-p", "format=\"profile\"", "-p", "output=\"/dev/null\""],
    "folded": ["-c", "sink.pyust.report", "-p", "format=\"folded\"", "-p", "output=\"/dev/null\""],
    "stacks": ["-c", "filter.pyust.stacks", "-c", "sink.utils.dummy"],
}


def plugin_args() -> list:
    built = os.path.join(REPO, "build", "src", "plugin")
    return ["--plugin-path", built] if os.path.isdir(built) else []


def pyust_env() -> dict:
    env = dict(os.environ)
    built = os.path.join(REPO, "build", "python")
    if os.path.isdir(built):
        env["PYTHONPATH"] = built
    return env


def record(events: int, directory: str, trace_format: str | None) -> tuple:
    """A trace of about `events` events; returns (path, events recorded)."""
    program = os.path.join(directory, "fib_program.py")
    with open(program, "w") as stream:
        stream.write(PROGRAM)
    trace = os.path.join(directory, f"trace-{events}-{trace_format or 'default'}")
    format_args = ["--trace-format", trace_format] if trace_format else []
    result = subprocess.run(
        [sys.executable, "-m", "pyust", "run", "-o", trace, "--subbuf-size", "8M",
         "--num-subbuf", "16", "--no-discard", *format_args, "--", program, str(events // 2)],
        capture_output=True, text=True, env=pyust_env(), timeout=3600)
    if result.returncode != 0:
        sys.exit(f"report_speed: recording failed: {result.stderr.strip()}")
    summary = result.stderr.strip().splitlines()[-1]
    recorded = int(summary.split(": ")[2].split()[0])
    return trace, recorded


def measure(trace: str, mode: str) -> tuple:
    """(wall s, cpu s, peak RSS MiB) of one babeltrace2 run."""
    command = ["babeltrace2", *plugin_args(), trace, *MODES[mode]]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"report_speed: {' '.join(command)} failed: {process.stderr.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", default="1000000,10000000",
                        help="trace sizes, comma-separated (default: 1000000,10000000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per mode (default: 3)")
    parser.add_argument("--keep", metavar="DIR", help="record the traces in DIR and keep them")
    parser.add_argument("--trace-formats", metavar="F[,F]",
                        help="record each size in these formats (ctf-1.8, ctf-2: LTTng 2.15 "
                             "or later; default: what LTTng writes)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.events.split(",")]
    formats = args.trace_formats.split(",") if args.trace_formats else [None]
    directory = args.keep or tempfile.mkdtemp(prefix="pyust-report-speed-")
    os.makedirs(directory, exist_ok=True)
    try:
        print(f"{'events':>12} {'format':>8} {'mode':>7} {'wall s':>8} {'cpu s':>8} "
              f"{'Mev/s':>7} {'vs dummy':>8} {'vs 1st':>7} {'peak RSS':>9}")
        for size in sizes:
            traces = [(trace_format, *record(size, directory, trace_format))
                      for trace_format in formats]
            # Interleaved: every mode on every format in each round, in a turning order.
            jobs = [(trace_format, mode) for trace_format, _, _ in traces for mode in MODES]
            runs = {job: [] for job in jobs}
            paths = {trace_format: path for trace_format, path, _ in traces}
            for round_ in range(args.rounds):
                shift = round_ % len(jobs)
                for trace_format, mode in jobs[shift:] + jobs[:shift]:
                    runs[trace_format, mode].append(measure(paths[trace_format], mode))
            first_rates = {}
            for trace_format, _, recorded in traces:
                cpu_of = {mode: statistics.median(r[1] for r in runs[trace_format, mode])
                          for mode in MODES}
                for mode in MODES:
                    results = runs[trace_format, mode]
                    rate = recorded / cpu_of[mode]
                    first_rates.setdefault(mode, rate)
                    print(f"{recorded:>12} {trace_format or 'default':>8} {mode:>7} "
                          f"{statistics.median(r[0] for r in results):>8.2f} "
                          f"{cpu_of[mode]:>8.2f} {rate / 1e6:>7.2f} "
                          f"{rate / (recorded / cpu_of['dummy']):>7.0%} "
                          f"{rate / first_rates[mode]:>6.0%} "
                          f"{max(r[2] for r in results):>7.1f}Mi")
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
