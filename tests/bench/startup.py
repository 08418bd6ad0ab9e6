#!/usr/bin/env python3
"""What pyust's start-up costs a user: `pyust --help`, what `pyust run` adds to a hello
world, and what its event count costs on a real program, beside the untraced interpreter's
own start-up measured in the same run.

    python3 tests/bench/startup.py [--rounds N] [--pause SECONDS] [--build DIR]
                                   [--baseline DIR] [--python PATH] [--no-jinja2]

Runs N rounds (default 11) of each case, in a new order each round, and prints the median,
minimum and maximum wall time of each, what it adds to `hello` and its ratio to it, and the
median CPU time of the command and its children (the session daemon's not counted), which a
loaded machine moves less:

  hello      python hello.py                                 (the floor)
  help       python -m pyust --help                          (target: at most 0.1 s)
  hook       python -m pyust -- hello.py                     (the hook, no session)
  run        python -m pyust run --no-count -- hello.py      (target: adds at most 0.1 s)
  run-count  python -m pyust run -- hello.py                 (and the summary's count)
  jinja2     python render.py                                (a template rendered 300 times)
  j-nocount  python -m pyust run --no-count -- render.py
  j-run      python -m pyust run -- render.py

and, per build, what the count costs on the jinja2 program, j-run minus j-nocount, as a share
of j-nocount (issue 12's target: at most 10%). jinja2 comes from Debian's python3-jinja2; its
three cases are left out with --no-jinja2, or when --python cannot import it.

`run` writes where a user's run writes, lttng's directory under $LTTNG_HOME or the home
directory (each run's trace is removed at once). The pyust package is --build's (default:
this tree's build/python) and, with --baseline (another build's python directory, e.g.
main's), that one's too, for before/after figures in the same run. Both are compiled to
bytecode first, as an installed package is, and PYTHONDONTWRITEBYTECODE is dropped. Needs a
session daemon, as pyust run does. Between two commands, the script pauses (--pause, 0.5 s by
default): the session daemon tears a run's session down after pyust run has ended, and a run
that overlaps that work waits for it (0.2 s in a third of back-to-back runs), which a
user's runs, seconds apart, do not see. A benchmark, not a test: the machine's load moves the
figures; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import compileall
import glob
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
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--pause", type=float, default=0.5)
    parser.add_argument("--build", default=os.path.join(REPO, "build", "python"))
    parser.add_argument("--baseline", help="another build's python directory")
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--no-jinja2", action="store_true", help="leave the jinja2 cases out")
    args = parser.parse_args()

    builds = {"new": args.build}
    if args.baseline:
        builds["old"] = args.baseline
    envs = {}
    for label, path in builds.items():
        compileall.compile_dir(os.path.join(path, "pyust"), quiet=1)
        env = dict(os.environ, PYTHONPATH=path)
        for name in ("PYUST", "PYTHONDONTWRITEBYTECODE"):
            env.pop(name, None)
        envs[label] = env
    py = args.python
    jinja2 = not args.no_jinja2 and subprocess.run(
        [py, "-c", "import jinja2"], stderr=subprocess.DEVNULL).returncode == 0
    if not args.no_jinja2 and not jinja2:
        print(f"{py} has no jinja2 (apt-get install python3-jinja2): its cases are left out\n")
    traces = os.path.join(os.environ.get("LTTNG_HOME") or os.path.expanduser("~"),
                          "lttng-traces")
    work = tempfile.mkdtemp(prefix="pyust-startup-")
    names = iter(range(1_000_000))

    def session() -> list:
        return ["--name", f"pyust-startup-{os.getpid()}-{next(names)}"]

    cases = [("hello", "new", lambda: [py, "hello.py"])]
    for label in builds:
        cases += [
            (f"help/{label}", label, lambda: [py, "-m", "pyust", "--help"]),
            (f"hook/{label}", label, lambda: [py, "-m", "pyust", "--", "hello.py"]),
            (f"run/{label}", label,
             lambda: [py, "-m", "pyust", "run", "--no-count", *session(), "--", "hello.py"]),
            (f"run-count/{label}", label,
             lambda: [py, "-m", "pyust", "run", *session(), "--", "hello.py"]),
        ]
    if jinja2:
        cases.append(("jinja2", "new", lambda: [py, "render.py"]))
        for label in builds:
            cases += [
                (f"j-nocount/{label}", label,
                 lambda: [py, "-m", "pyust", "run", "--no-count", *session(), "--", "render.py"]),
                (f"j-run/{label}", label,
                 lambda: [py, "-m", "pyust", "run", *session(), "--", "render.py"]),
            ]
    times = {name: [] for name, _, _ in cases}
    cpus = {name: [] for name, _, _ in cases}
    try:
        for name, text in (("hello.py", HELLO), ("render.py", RENDER)):
            with open(os.path.join(work, name), "w") as file:
                file.write(text)
        for name, label, command in cases:  # a first run of each, not counted
            timed(command(), envs[label], work)
        order = random.Random(1)
        for _ in range(args.rounds):
            for name, label, command in order.sample(cases, len(cases)):
                wall, cpu = timed(command(), envs[label], work)
                times[name].append(wall)
                cpus[name].append(cpu)
                for trace in glob.glob(os.path.join(traces, f"pyust-startup-{os.getpid()}-*")):
                    shutil.rmtree(trace, ignore_errors=True)
                time.sleep(args.pause)
    finally:
        for trace in glob.glob(os.path.join(traces, f"pyust-startup-{os.getpid()}-*")):
            shutil.rmtree(trace, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)

    median = {name: statistics.median(values) for name, values in times.items()}
    floor = median["hello"]
    rows = [("case", "median s", "min s", "max s", "adds s", "x hello", "cpu s")]
    rows += [(name, f"{median[name]:.3f}", f"{min(values):.3f}", f"{max(values):.3f}",
              f"{median[name] - floor:.3f}", f"{median[name] / floor:.1f}",
              f"{statistics.median(cpus[name]):.3f}")
             for name, values in times.items()]
    for row in rows:
        print(f"{row[0]:<14}" + "".join(f"{cell:>9}" for cell in row[1:]))
    print(f"({args.rounds} rounds, {args.pause:g} s apart; load average "
          f"{os.getloadavg()[0]:.1f}; {py})\n")
    for label in builds:
        print(f"{label}: --help takes {median[f'help/{label}']:.3f} s (target: at most 0.1 s); "
              f"run --no-count adds {median[f'run/{label}'] - floor:.3f} s to hello.py "
              f"(target: at most 0.1 s), the count {median[f'run-count/{label}'] - floor:.3f} s")
        if jinja2:
            count = median[f"j-run/{label}"] - median[f"j-nocount/{label}"]
            print(f"{label}: the count costs {count:.3f} s on jinja2, "
                  f"{100 * count / median[f'j-nocount/{label}']:.0f}% of its traced run "
                  f"({median[f'j-nocount/{label}']:.3f} s; target: at most 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
