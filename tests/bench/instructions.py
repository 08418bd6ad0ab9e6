#!/usr/bin/env python3
"""pyust's instruction-count benchmark: the work each tracer adds, exactly.

    python3 tests/bench/instructions.py [--python PATH] [--pyust-path DIR]
                                        [--against DIR] [--modes M,...]
                                        [--workloads W1,W3]

Wall-clock ratios on a shared machine move by 20% and more between runs;
instruction counts do not. Each measurement is overhead.py's child (the same
warm-up, the same pair of calls around the workload, the same LTTng session:
python:* with the contexts vpid and vtid, tracking the child alone) run under
valgrind's callgrind, twice: at two sizes of the workload (W1 at scale 0.01 and
0.03; W2 and W4 likewise; W3 with one repeat and three, scale 0.05 and 0.15). The
difference is the workload's own instructions: start-up, imports, warm-up and
pyust's start and stop cancel out.

The table prints millions of instructions, the ratio to the untraced run, and
the standard modes against cProfile and the fast mode against viztracer (when
the children can import it: peers.py). What instructions miss: cache misses,
clock reads (rdtsc, the vDSO), contention; tests/bench/overhead.py measures
time. About 50 times slower than the program: some minutes for the default
modes on W1 and W3.

Modes: those of overhead.py (untraced, cprofile, pyust, pyust-fast, viztracer,
...; default untraced,cprofile,pyust,pyust-fast,viztracer). Needs valgrind
(apt-get install valgrind) and, for the pyust modes, a reachable
lttng-sessiond. PYUST_BACKEND in the environment reaches the children (e.g.
PYUST_BACKEND=monitoring on 3.12+ to measure sys.monitoring where pyust would
use its eval-frame back end).

Counts are exact for one program, but the interpreter's heap layout moves them:
the path of pyust's package, its files and PYTHONHASHSEED change where
strings and objects land, hence the collisions of CPython's dictionaries and
method cache (W1 moved by 0.6% with the package's path alone). The children get
PYTHONHASHSEED=0 (unless it is set) and PYTHONDONTWRITEBYTECODE=1: each compiles
what it imports of pyust, which cancels out. To compare two builds of pyust's native module (a branch
against main's), --against DIR measures every pyust mode with both, from one
temporary copy of --pyust-path's package into which each build's native module
is copied in turn (the builds must fit that package's Python side), and adds
the change to the table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

import overhead

DEFAULT_MODES = ("untraced", "cprofile", "pyust", "pyust-fast", "viztracer")
# Two sizes per workload: W3 runs round(20 * scale) repeats of its work.
SCALES = {"W1": (0.01, 0.03), "W2": (0.01, 0.03), "W3": (0.05, 0.15), "W4": (0.01, 0.03)}
# Which mode each mode is compared with, when both ran.
REFERENCES = {"pyust": "cprofile", "pyust-fast": "viztracer", "pyust-fast-lines": "viztracer"}


def parse_args(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Count the instructions each tracer adds to the benchmark workloads "
                    "(callgrind; exact on a noisy machine).")
    parser.add_argument("--python", default=sys.executable, metavar="PATH",
                        help="the interpreter of the measured children (default: this one)")
    parser.add_argument("--pyust-path", default=None, metavar="DIR",
                        help="prepended to the children's PYTHONPATH (default: the build "
                        "scripts/setup made for that interpreter, as overhead.py finds it)")
    parser.add_argument("--against", default=None, metavar="DIR",
                        help="another build of pyust's package (e.g. main's build/python): "
                        "each pyust mode is measured with its native module too, from the "
                        "same directory")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES),
                        help=f"comma-separated modes of overhead.py (default "
                        f"{','.join(DEFAULT_MODES)})")
    parser.add_argument("--workloads", default="W1,W3",
                        help="comma-separated subset of W1,W2,W3,W4 (default W1,W3)")
    options = parser.parse_args(argv)
    options.modes = [m for m in options.modes.split(",") if m]
    options.workloads = [w for w in options.workloads.split(",") if w]
    for mode in options.modes:
        if mode not in overhead.MODES:
            parser.error(f"unknown mode {mode!r}; choose from {', '.join(overhead.MODES)}")
    for workload in options.workloads:
        if workload not in SCALES:
            parser.error(f"unknown workload {workload!r}; choose from {', '.join(SCALES)}")
    return options


def native_module(package_dir: str) -> str:
    """The file name of pyust's native module in a build's python directory."""
    for name in sorted(os.listdir(os.path.join(package_dir, "pyust"))):
        if name.startswith("_native.") and name.endswith(".so"):
            return name
    raise overhead.BenchError(f"no pyust/_native*.so in {package_dir}: not a build of pyust")


def one_package(pyust_path: str, builds: dict, work_dir: str) -> tuple:
    """A copy of pyust_path's package in work_dir, and a function that puts the native module
    of builds[label] (a build's python directory) into it."""
    name = native_module(pyust_path)
    for build in builds.values():
        if native_module(build) != name:
            raise overhead.BenchError(f"{build} has no {name}: a build for another interpreter")
    copy = os.path.join(work_dir, "package")
    shutil.copytree(os.path.join(pyust_path, "pyust"), os.path.join(copy, "pyust"),
                    ignore=shutil.ignore_patterns("__pycache__"))

    def use(label: str) -> None:
        shutil.copyfile(os.path.join(builds[label], "pyust", name),
                        os.path.join(copy, "pyust", name))
    return copy, use


def callgrind_total(path: str) -> int:
    """The instruction count a callgrind output file ends with."""
    with open(path) as stream:
        for line in stream:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise overhead.BenchError(f"no instruction total in {path}")


def count(runner: overhead.Runner, mode: str, workload: str, scale: float) -> int:
    """Instructions of one child run at this scale."""
    out = os.path.join(runner.work_dir, f"callgrind-{mode}-{workload}-{scale}.out")
    runner.options.scale = scale
    runner.options.child_prefix = f"valgrind --tool=callgrind --callgrind-out-file={out}"
    try:
        runner.measure(mode, workload)
        return callgrind_total(out)
    finally:
        if os.path.exists(out):
            os.unlink(out)


def main(argv: list) -> int:
    options = parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instructions.py: valgrind is not installed: apt-get install valgrind",
              file=sys.stderr)
        return 1
    base = ["--python", options.python, "--wait-quiet", "0"]
    if options.pyust_path is not None:
        base += ["--pyust-path", options.pyust_path]
    run = overhead.parse_args(base)
    package_dir = tempfile.mkdtemp(prefix="pyust-instructions-")
    try:
        version = overhead.interpreter_version(options.python)
        if run.pyust_path is None:
            run.pyust_path = overhead.default_pyust_path(options.python, version)
        if any(m.startswith("pyust") for m in options.modes):
            overhead.check_sessiond()
        # With --against, each build's native module in turn, in one copy of the package.
        builds = {"": run.pyust_path}
        use = None
        if options.against is not None:
            builds["against"] = options.against
            pyust_from = f"{run.pyust_path}, against {options.against}"
            run.pyust_path, use = one_package(run.pyust_path, builds, package_dir)
        else:
            pyust_from = run.pyust_path or "the children own sys.path"
    except overhead.BenchError as error:
        print(f"instructions.py: {error}", file=sys.stderr)
        shutil.rmtree(package_dir, ignore_errors=True)
        return 1
    runner = overhead.Runner(run)
    # Every child compiles what it imports of pyust's package (the copy has no bytecode): else
    # the first child would write the bytecode the others read, and its count alone would hold
    # the compiler's work (some 27 million instructions on 3.14, in one count of the first mode).
    runner.env["PYTHONDONTWRITEBYTECODE"] = "1"
    runner.env.setdefault("PYTHONHASHSEED", "0")
    modes = list(options.modes)
    wanted_peers = [m for m in modes if m in overhead.peers.PEERS]
    if wanted_peers:
        found = overhead.peers.probe(options.python, runner.env, wanted_peers)
        for mode in wanted_peers:
            if "error" in found.get(mode, {"error": "?"}):
                print(f"skipping {mode}: "
                      f"{overhead.peers.skip_reason(mode, options.python, found.get(mode, {}))}")
                modes.remove(mode)
    print(f"Python {'.'.join(map(str, version))} ({options.python}); pyust from {pyust_from}; "
          f"PYUST_BACKEND={os.environ.get('PYUST_BACKEND', '(unset)')}")
    counts: dict = {}  # (workload, mode, build label) -> instructions
    try:
        for workload in options.workloads:
            low, high = SCALES[workload]
            for mode in modes:
                for label in builds if use and mode.startswith("pyust") else [""]:
                    if use:
                        use(label)
                    counts[workload, mode, label] = (count(runner, mode, workload, high) -
                                                     count(runner, mode, workload, low))
                    print(f"{workload} {mode:18} {counts[workload, mode, label] / 1e6:10,.1f} M"
                          f"{' (' + label + ')' if label else ''}", flush=True)
    except overhead.BenchError as error:
        print(f"instructions.py: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        runner.close()
        shutil.rmtree(package_dir, ignore_errors=True)
    print()
    print(f"{'workload':8} {'mode':18} {'M instr':>10} {'/ untraced':>11} {'/ reference':>22}"
          + (f" {'against':>10} {'change':>8}" if use else ""))
    for (workload, mode, label), total in counts.items():
        if label:
            continue
        untraced = counts.get((workload, "untraced", ""))
        reference = REFERENCES.get(mode)
        versus = counts.get((workload, reference, "")) if reference else None
        other = counts.get((workload, mode, "against"))
        print(f"{workload:8} {mode:18} {total / 1e6:10,.1f} "
              f"{f'{total / untraced:.2f}x' if untraced else '-':>11} "
              f"{f'{total / versus:.2f}x {reference}' if versus else '-':>22}"
              + (f" {other / 1e6:10,.1f} {(total - other) / other:+8.2%}" if other else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
