#!/usr/bin/env python3
"""What `pyust attach` costs: how long it takes, and what the process pays.

    python3 tests/bench/attach.py [--rounds R] [--window S] [--python PATH]
                                  [--build DIR] [--fast]

A workload process (W1's shape: a recursive fib and small methods, in a loop)
writes, every 0.25 s, how many loop iterations it made: its own throughput,
measured in the process. Each round starts one and, in phases of S seconds:

  before     untraced, as started
  attached   pyust attach PID (--fast with --fast), from its first recorded event
  after      after the detach

and, interleaved, the same workload under `pyust run` (same mode) for its whole
life. Printed, medians over the rounds:
  - from `pyust attach` to the first recorded event (the event's time against the
    command's start, both CLOCK_REALTIME), and from Ctrl-C to pyust attach's end
    (a detached process);
  - the throughput while attached relative to before (the cost of tracing), beside
    pyust run's relative to an untraced run of the same workload, and the two traced
    rates against each other (attached / pyust run's: the same cost is expected, 1.0);
  - the throughput after the detach relative to before (target: at most 1.02x
    slower, i.e. a ratio of at least 0.98), from 1 s after pyust attach ends: the
    session daemon still tears the session down then (on a 2-core machine its work
    competes with the process's).
Benchmarks, not tests: compare the columns of one run.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

WORKLOAD = """\
import os, sys, time

class P:
    def __init__(self, x):
        self.x = x
    def get(self):
        return self.x

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def unit():
    return fib(12) + P(3).get()

out = sys.argv[1]
print("ready", flush=True)
n = 0
last = time.monotonic()
with open(out, "a") as stream:
    while not os.path.exists(out + ".end"):
        unit()
        n += 1
        now = time.monotonic()
        if now - last >= 0.25:
            stream.write(f"{time.time():.6f} {n / (now - last):.1f}\\n")
            stream.flush()
            n = 0
            last = now
"""


def rates(path: str, start: float, end: float) -> list:
    """The workload's iterations per second over the windows that lie within [start, end]."""
    found = []
    with open(path) as stream:
        for line in stream:
            stamp, rate = map(float, line.split())
            if start + 0.3 <= stamp <= end:
                found.append(rate)
    return found


def first_event_time(trace: str) -> float:
    """CLOCK_REALTIME seconds of the trace's first python:* event."""
    import bt2

    for message in bt2.TraceCollectionMessageIterator(trace):
        if type(message) is bt2._EventMessageConst and message.event.name.startswith("python:"):
            return message.default_clock_snapshot.ns_from_origin / 1e9
    raise RuntimeError(f"no python event in {trace}")


def one_round(args, env, work: str, index: int) -> dict:
    script = os.path.join(work, "workload.py")
    out = os.path.join(work, f"rates-{index}")
    trace = os.path.join(work, f"trace-{index}")
    process = subprocess.Popen([args.python, script, out], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    before_start = time.time()
    time.sleep(args.window)
    before_end = time.time()
    command = [args.python, "-m", "pyust", "attach", str(process.pid), "-o", trace]
    command += ["--fast"] if args.fast else []
    launched = time.time()
    attach = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    while "attached to process" not in attach.stderr.readline():
        if attach.poll() is not None:
            raise RuntimeError("pyust attach failed: " + attach.stderr.read())
    attached = time.time()
    time.sleep(args.window)
    attached_end = time.time()
    interrupted = time.monotonic()
    attach.send_signal(signal.SIGINT)
    attach.communicate(timeout=300)
    detach_seconds = time.monotonic() - interrupted
    time.sleep(1.0)  # the session daemon's teardown of the session
    after_start = time.time()
    time.sleep(args.window)
    after_end = time.time()
    open(out + ".end", "w").close()
    process.wait(timeout=60)
    first = first_event_time(trace)
    before = statistics.median(rates(out, before_start, before_end))
    traced = statistics.median(rates(out, attached, attached_end))
    return {"to_first_event": first - launched,
            "to_detached": detach_seconds,
            "attached": traced / before,
            "after": statistics.median(rates(out, after_start, after_end)) / before,
            "attached_rate": traced}


def run_round(args, env, work: str, index: int) -> tuple:
    """The workload's throughput untraced and under pyust run, same mode (iterations per
    second)."""
    script = os.path.join(work, "workload.py")
    result = []
    for traced in (False, True):
        out = os.path.join(work, f"run-{index}-{traced}")
        command = [args.python]
        if traced:
            command += ["-m", "pyust", "run", "-o", os.path.join(work, f"runtrace-{index}")]
            command += ["--fast"] if args.fast else []
            command += ["--"]
        process = subprocess.Popen(command + [script, out], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, env=env)
        assert process.stdout.readline().strip() == "ready"
        start = time.time()
        time.sleep(args.window + 0.5)
        end = time.time()
        open(out + ".end", "w").close()
        process.wait(timeout=300)
        result.append(statistics.median(rates(out, start, end)))
    return result[0], result[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=float, default=3.0, metavar="S",
                        help="seconds of each phase (default 3)")
    parser.add_argument("--python", default="/usr/bin/python3", metavar="PATH")
    parser.add_argument("--build", default=os.path.join(REPO, "build", "python"), metavar="DIR",
                        help="pyust's package directory for --python (default: build/python)")
    parser.add_argument("--fast", action="store_true", help="the fast mode, for both commands")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=args.build)
    results = []
    with tempfile.TemporaryDirectory(prefix="pyust-bench-attach-") as work:
        with open(os.path.join(work, "workload.py"), "w") as stream:
            stream.write(WORKLOAD)
        for index in range(args.rounds):
            figures = one_round(args, env, work, index)
            untraced, traced = run_round(args, env, work, index)
            figures["run"] = traced / untraced
            figures["attached_vs_run"] = figures.pop("attached_rate") / traced
            results.append(figures)
            print(f"round {index + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()),
                  flush=True)
    median = {key: statistics.median(r[key] for r in results) for key in results[0]}
    mode = "fast" if args.fast else "standard"
    print(f"\n{args.python} ({mode} mode), {args.rounds} rounds of {args.window:g} s phases, medians:")
    print(f"  pyust attach to the first recorded event   {median['to_first_event']:.2f} s")
    print(f"  Ctrl-C to a detached process               {median['to_detached']:.2f} s")
    print(f"  throughput while attached / before         {median['attached']:.3f}"
          f"  (pyust run / untraced: {median['run']:.3f})")
    print(f"  throughput attached / under pyust run      {median['attached_vs_run']:.3f}"
          f"  (the same cost: 1.0)")
    print(f"  throughput after the detach / before       {median['after']:.3f}"
          f"  (target: at least 0.98)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
