#!/usr/bin/env python3
"""Whole commands, as a user types them: pyust run against viztracer's and cProfile's.

    python3 tests/bench/end_to_end.py [--rounds R] [--scale S] [--workloads W1,W3]
                                      [--python PATH] [--build DIR] [--viztracer-path DIR]

For each workload (workloads.py), R rounds, interleaved in a new order each round, of:

  untraced     python prog.py
  cprofile     python -m cProfile -o OUT prog.py          (its save: a pstats file)
  pyust        python -m pyust run -o DIR -- prog.py      (session, hook, stop, count)
  pyust-fast   python -m pyust run --fast -o DIR -- prog.py
  viztracer    python -m viztracer -o OUT.json -- prog.py (its save: the JSON it writes;
               only when --python imports viztracer, with --viztracer-path prepended to
               PYTHONPATH: a build from its public source in a scratch folder)

and prints the median wall time of each, the ratio to untraced, and pyust's modes against
viztracer's. The wall time is what the user waits for: start-up, the traced run, and
writing the result (the trace is on disk once `pyust run` returns; viztracer's JSON once it
exits). Benchmarks, not tests: compare the columns of one run, never across machines.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from startup import timed  # noqa: E402  (the bench folder is not a package)

PROGRAM = """\
import sys
sys.path.insert(0, {bench!r})
import workloads
workloads.WORKLOADS[{workload!r}]({scale!r})
"""


def imports_viztracer(python: str, env: dict) -> str | None:
    """viztracer's version when python (with env) imports it, else None."""
    result = subprocess.run([python, "-c", "import viztracer; print(viztracer.__version__)"],
                            env=env, capture_output=True, text=True, timeout=60)
    return result.stdout.strip() if result.returncode == 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0, help="workload scale (default 1.0)")
    parser.add_argument("--workloads", default="W1,W3", help="comma-separated (default W1,W3)")
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--build", default=os.path.join(REPO, "build", "python"),
                        help="pyust's python directory (default: this tree's build)")
    parser.add_argument("--viztracer-path", default="",
                        help="a directory that holds viztracer and objprint")
    args = parser.parse_args()
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]

    env = dict(os.environ)
    env.pop("PYUST", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (args.build, args.viztracer_path) if p)
    py = args.python
    viztracer = imports_viztracer(py, env)
    if viztracer is None:
        print(f"viztracer: not importable by {py} (give --viztracer-path): left out")

    work = tempfile.mkdtemp(prefix="pyust-end-to-end-")
    try:
        counter = iter(range(1_000_000))

        def out(suffix: str = "") -> str:
            return os.path.join(work, f"out-{next(counter)}{suffix}")

        cases = []
        for workload in workloads:
            program = os.path.join(work, f"{workload}.py")
            with open(program, "w") as file:
                file.write(PROGRAM.format(bench=HERE, workload=workload, scale=args.scale))
            cases += [
                (workload, "untraced", lambda p=program: [py, p]),
                (workload, "cprofile", lambda p=program: [py, "-m", "cProfile", "-o", out(), p]),
                (workload, "pyust", lambda p=program: [py, "-m", "pyust", "run", "-o", out(),
                                                       "--", p]),
                (workload, "pyust-fast", lambda p=program: [py, "-m", "pyust", "run", "--fast",
                                                            "-o", out(), "--", p]),
            ]
            if viztracer:
                cases.append((workload, "viztracer",
                              lambda p=program: [py, "-m", "viztracer", "--quiet", "-o",
                                                 out(".json"), "--", p]))
        times = {(w, m): [] for w, m, _ in cases}
        order = random.Random(1)
        for _ in range(args.rounds):
            for workload, mode, command in order.sample(cases, len(cases)):
                wall, _ = timed(command(), env, work)
                times[(workload, mode)].append(wall)
                for entry in os.listdir(work):
                    if entry.startswith("out-"):
                        path = os.path.join(work, entry)
                        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        median = {key: statistics.median(values) for key, values in times.items()}
        version = subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True).stdout.strip()
        print(f"{py} ({version}), scale {args.scale}, "
              f"{args.rounds} rounds, load average {os.getloadavg()[0]:.1f}"
              + (f", viztracer {viztracer}" if viztracer else ""))
        print(f"{'workload':<9} {'mode':<11} {'median s':>9} {'min s':>7} {'x untraced':>11}")
        for (workload, mode), values in times.items():
            ratio = median[(workload, mode)] / median[(workload, "untraced")]
            print(f"{workload:<9} {mode:<11} {median[(workload, mode)]:9.3f} {min(values):7.3f} "
                  f"{ratio:10.2f}x")
        if viztracer:
            print()
            for workload in workloads:
                base = median[(workload, "viztracer")]
                print(f"{workload}: pyust run {median[(workload, 'pyust')] / base:.2f}x "
                      f"viztracer's time, pyust run --fast "
                      f"{median[(workload, 'pyust-fast')] / base:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
