#!/usr/bin/env python3
"""What `pyust run` adds around a program, and what its event count costs.

    python3 tests/bench/run_startup.py [--rounds R] [--baseline DIR] [--build DIR]
                                       [--python PATH]

Runs, interleaved in a new order each round, R rounds of each case below (medians of wall time printed),
with the pyust package of --build (default: this tree's build/python) and, when
given, of --baseline (another build's python directory, e.g. main's, for
before/after figures in the same run):

  hello      python hello.py                              (the floor)
  hook       python -m pyust -- hello.py                  (the hook, no session)
  run        python -m pyust run -o DIR -- hello.py       (session + hook + count)
  jinja2     python render.py                             (a template rendered 300 times)
  j-nocount  python -m pyust run --no-count -- render.py
  j-run      python -m pyust run -- render.py

and prints what `run` adds to hello.py (target of issue 12: at most 0.3 s) and
what the count costs on the jinja2 program, j-run minus j-nocount, as a share of
j-nocount (target: at most 10%). jinja2 comes from Debian's python3-jinja2.
Benchmarks, not tests: the machine's load moves the figures; compare the columns
of one run.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

HELLO = "print('hello')\n"
RENDER = """\
import jinja2
env = jinja2.Environment()
template = env.from_string(
    "{% for i in items %}<li>{{ i.name|upper }} {{ i.value * 2 }}</li>{% endfor %}")
items = [{"name": f"n{i}", "value": i} for i in range(200)]
for _ in range(300):
    template.render(items=items)
"""


def timed(command: list, env: dict, cwd: str) -> tuple:
    """(wall, cpu) seconds of command: cpu is the user and system time of the
    command and its children (lttng, babeltrace2, the program; not the session
    daemon's), which a loaded machine moves less than the wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {result.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--build", default=os.path.join(REPO, "build", "python"))
    parser.add_argument("--baseline", help="another build's python directory")
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--no-jinja2", action="store_true")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="pyust-run-startup-")
    try:
        with open(os.path.join(work, "hello.py"), "w") as file:
            file.write(HELLO)
        with open(os.path.join(work, "render.py"), "w") as file:
            file.write(RENDER)
        builds = {"new": args.build}
        if args.baseline:
            builds["old"] = args.baseline
        envs = {}
        for label, path in builds.items():
            env = dict(os.environ)
            env["PYTHONPATH"] = path
            env.pop("PYUST", None)
            envs[label] = env
        py = args.python
        counter = iter(range(1_000_000))

        def out() -> str:
            return os.path.join(work, f"trace-{next(counter)}")

        cases = [("hello", None, lambda: [py, "hello.py"])]
        for label in builds:
            cases += [(f"hook/{label}", label, lambda: [py, "-m", "pyust", "--", "hello.py"]),
                      (f"run/{label}", label,
                       lambda: [py, "-m", "pyust", "run", "-o", out(), "--", "hello.py"]),
                      (f"run-nocount/{label}", label,
                       lambda: [py, "-m", "pyust", "run", "--no-count", "-o", out(), "--",
                                "hello.py"])]
        if not args.no_jinja2:
            cases.append(("jinja2", None, lambda: [py, "render.py"]))
            for label in builds:
                cases += [(f"j-nocount/{label}", label,
                           lambda: [py, "-m", "pyust", "run", "--no-count", "-o", out(), "--",
                                    "render.py"]),
                          (f"j-run/{label}", label,
                           lambda: [py, "-m", "pyust", "run", "-o", out(), "--", "render.py"])]
        times = {name: [] for name, _, _ in cases}
        cpus = {name: [] for name, _, _ in cases}
        # A new order each round: a run's session is torn down by the daemon after pyust run
        # ends (destroy --no-wait), which slows whichever case comes next.
        order = random.Random(1)
        for _ in range(args.rounds):
            for name, label, command in order.sample(cases, len(cases)):
                wall, cpu = timed(command(), envs[label or "new"], work)
                times[name].append(wall)
                cpus[name].append(cpu)
                for entry in os.listdir(work):
                    if entry.startswith("trace-"):
                        shutil.rmtree(os.path.join(work, entry))
        median = {name: statistics.median(values) for name, values in times.items()}
        cpu = {name: statistics.median(values) for name, values in cpus.items()}
        print(f"{'case':<18} {'median s':>9} {'min s':>7} {'max s':>7} {'cpu s':>7}"
              f"   ({args.rounds} rounds; load average {os.getloadavg()[0]:.1f})")
        for name, values in times.items():
            print(f"{name:<18} {median[name]:9.3f} {min(values):7.3f} {max(values):7.3f} "
                  f"{cpu[name]:7.3f}")
        print()
        for label in builds:
            print(f"{label}: run adds {median[f'run/{label}'] - median['hello']:.3f} s to hello.py "
                  f"(min {min(times[f'run/{label}']) - min(times['hello']):.3f} s; "
                  f"--no-count {median[f'run-nocount/{label}'] - median['hello']:.3f} s; "
                  f"hook alone {median[f'hook/{label}'] - median['hello']:.3f} s)")
            if not args.no_jinja2:
                count = median[f"j-run/{label}"] - median[f"j-nocount/{label}"]
                print(f"{label}: the count costs {count:.3f} s on jinja2, "
                      f"{100 * count / median[f'j-nocount/{label}']:.0f}% of its traced run "
                      f"({median[f'j-nocount/{label}']:.3f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
