#!/usr/bin/env python3
"""What `--native` and `--kernel` cost on top of a Python-only trace (issue 5).

    python3 tests/bench/fullstack.py [--rounds N] [--scale X] [--every N] [--json FILE]
                                     [--quick] [--python PATH] [--pyust-path DIR]

The workload (fullstack_workload.py): a Python loop calls a Python function
that calls a Cython function of fullstack_ext/ (built here with `pyust cflags
--cython`), which calls two C functions on every call and writes 17 bytes to
/dev/null with write(2) on every --every-th call: Python frames, five native
frames per iteration, and system calls. Scale 1.0 is 300,000 iterations.

Modes, one fresh process per (mode, round), interleaved in a rotating order:

  untraced         the workload alone (instrumented extension, no pyust)
  run              pyust run: python:* only (Python-only trace, the reference)
  run-plain        pyust run, the extension built WITHOUT -finstrument-functions:
                   run / run-plain is what the instrumentation alone costs
                   (calls of glibc's empty __cyg_profile_func_* without --native)
  native           pyust run --native: the cyg-profile events of every native frame
  kernel           pyust run --kernel: system calls and sched_switch (perf when
                   lttng-modules is absent: root and tracefs needed)
  native-kernel    pyust run --native --kernel

Two times per run: in-process (the workload times its own loop with
time.perf_counter, after a warm-up) and end to end (the parent's wall clock
around the whole command: interpreter start, pyust run's session set-up,
perf's start, the workload, stop, destroy, perf data convert). pyust run
gets --no-count: counting the trace is this script's job, after the clock
stops. For each trace it counts, with babeltrace2 (text output, filtered by
the workload's vpid: other engineers' Python programs with pyust loaded wake
up in any session that enables python:* and land in it), the workload's
python:* events, its cyg-profile events, its other native-channel events
(statedump, dl, lib), the foreign events, and perf's kernel events; the
discarded events pyust run reports; the trace's size.

The table shows medians, min-max, ratios to untraced and to `run` (the
median ratio, and the paired one: median over rounds of the ratio within a
round), and what each layer costs per event. Sessions are named
pyust-fullstack-<pid>-<random>-<n>; pyust run destroys them (this script
destroys them too when a run fails), and traces are deleted after counting.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import re
import secrets
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import overhead  # noqa: E402  (the house helpers: sessions, machine, paired ratios)
from overhead import BenchError  # noqa: E402

REPO = overhead.REPO
WORKLOAD = os.path.join(HERE, "fullstack_workload.py")
EXT_SOURCES = os.path.join(HERE, "fullstack_ext")
EXT_NAME = "fullstack_ext"

MODES = ("untraced", "run", "run-plain", "native", "kernel", "native-kernel")
LABELS = {
    "untraced": "untraced",
    "run": "run (Python only)",
    "run-plain": "run, ext. not instrumented",
    "native": "run --native",
    "kernel": "run --kernel",
    "native-kernel": "run --native --kernel",
}
RUN_FLAGS = {
    "run": [],
    "run-plain": [],
    "native": ["--native"],
    "kernel": ["--kernel"],
    "native-kernel": ["--native", "--kernel"],
}
# The reference of "on top of a Python-only trace".
REFERENCE = "run"
ITERATIONS_AT_SCALE_1 = 300_000
QUICK_SCALE = 0.25
QUICK_ROUNDS = 2
DEFAULT_ROUNDS = 5
RUN_TIMEOUT = 900
COUNT_TIMEOUT = 600
RETRY_PAUSE_S = 10.0
# A record of the workload in babeltrace2's text output: "[time] host name: { ... }".
_EVENT_LINE = re.compile(r"^\[[^\]]*\] \S+ ([A-Za-z0-9_]+):")


# --- the extension, built for the children's interpreter ----------------------


def build_main(out: str) -> None:
    """Builds fullstack_ext twice into out (instrumented/ and plain/) with this
    interpreter's headers; prints a JSON line with the two module paths."""
    sys.path.insert(0, os.path.join(REPO, "cyg_profile"))
    import build_examples  # the examples' own compile and link steps

    cython = shutil.which("cython3") or shutil.which("cython")
    if cython is None:
        raise SystemExit("fullstack.py: cython3 is not installed (apt-get install cython3)")
    sources = os.path.join(EXT_SOURCES, EXT_NAME + ".pyx"), os.path.join(EXT_SOURCES,
                                                                         "fs_helper.c")
    variants = {"instrumented": build_examples.native.cflags(cython=True), "plain": ["-g"]}
    built = {}
    for variant, flags in variants.items():
        directory = build_examples.Path(out) / variant
        directory.mkdir(parents=True, exist_ok=True)
        try:
            generated = build_examples._cythonize(cython, build_examples.Path(sources[0]),
                                                  directory)
            built[variant] = str(build_examples._link(
                os.environ.get("CC", "gcc"), EXT_NAME, [generated, sources[1]], directory,
                flags + [f"-I{EXT_SOURCES}"]))
        except build_examples.BuildError as error:
            raise SystemExit(f"fullstack.py: cannot build the {variant} extension: {error}")
    built["cflags"] = variants["instrumented"]
    print("PYUST-BENCH " + json.dumps(built), flush=True)


def instrumented_sites(path: str) -> int | None:
    """Calls of __cyg_profile_func_enter in the module (objdump), or None."""
    if shutil.which("objdump") is None:
        return None
    done = subprocess.run(["objdump", "-d", path], capture_output=True, text=True, timeout=120)
    return sum(1 for line in done.stdout.splitlines()
               if "call" in line and "<__cyg_profile_func_enter" in line)


# --- counting a trace -----------------------------------------------------------


def count_ust(trace: str, pid: int, timeout: float = COUNT_TIMEOUT) -> dict | None:
    """The user-space events of trace by owner and kind: the workload's
    (vpid == pid) python:*, cyg-profile and other events, and everybody
    else's. None when babeltrace2 fails or takes longer than timeout."""
    ust = os.path.join(trace, "ust")
    counts = {"python": 0, "cyg_profile": 0, "native_other": 0, "foreign": 0}
    if not os.path.isdir(ust):
        return counts
    marker = f"{{ vpid = {pid},"
    process = subprocess.Popen(["babeltrace2", "--no-delta", ust], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, errors="replace")
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            match = _EVENT_LINE.match(line)
            if match is None:  # a discarded-events warning, or a continued line
                continue
            if marker not in line:
                counts["foreign"] += 1
            elif match.group(1) == "python":
                counts["python"] += 1
            elif match.group(1).startswith("lttng_ust_cyg_profile"):
                counts["cyg_profile"] += 1
            else:
                counts["native_other"] += 1
    finally:
        timer.cancel()
        process.stdout.close()
        status = process.wait()
    return counts if status == 0 else None


# What perf writes below the trace: system calls, and the system-wide sched_switch.
KERNEL_DIRS = ("kernel-perf", "kernel-perf-sched")


def count_kernel(trace: str, timeout: float = COUNT_TIMEOUT) -> int | None:
    """Events of the perf traces (the workload's system calls: perf follows its pid; the
    switches of its command name), by babeltrace2's counter; 0 without them, None when
    babeltrace2 fails."""
    directories = [os.path.join(trace, d) for d in KERNEL_DIRS
                   if os.path.isdir(os.path.join(trace, d))]
    if not directories:
        return 0
    try:
        done = subprocess.run(["babeltrace2", *directories, "--component=sink.utils.counter"],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    count = None  # the counter prints running totals: the last one is the total
    for line in done.stdout.splitlines():
        words = line.split()
        if words[1:] == ["Event", "messages"] and words[0].isdigit():
            count = int(words[0])
    return count if done.returncode == 0 else None


# --- the runs -------------------------------------------------------------------


class Runner(overhead.Runner):
    """One measurement per call of measure(); a work directory for the
    extension and the traces; waits for other python:* sessions to end
    (overhead.Runner.wait_until_alone)."""

    def __init__(self, options: argparse.Namespace) -> None:
        super().__init__(options)
        self.prefix = f"pyust-fullstack-{os.getpid()}-{secrets.token_hex(3)}-"
        self.extensions: dict = {}

    def build(self) -> dict:
        out = os.path.join(self.work_dir, "ext")
        done = subprocess.run([self.options.python, os.path.abspath(__file__), "--build", out],
                              capture_output=True, text=True, env=self.env, timeout=600)
        for line in done.stdout.splitlines():
            if line.startswith("PYUST-BENCH ") and done.returncode == 0:
                self.extensions = json.loads(line[len("PYUST-BENCH "):])
                return self.extensions
        raise BenchError(f"cannot build the extension:\n{done.stderr.strip()}")

    def workload_args(self, mode: str) -> list:
        variant = "plain" if mode == "run-plain" else "instrumented"
        return [WORKLOAD, os.path.dirname(self.extensions[variant]),
                str(self.options.iterations), str(self.options.every)]

    def measure(self, mode: str) -> dict:
        if mode == "untraced":
            result = self._run(mode, [self.options.python] + self.workload_args(mode), None)
            del result["stderr"]
            return result
        others = self.wait_until_alone()
        self.session_count += 1
        name = f"{self.prefix}{self.session_count}"
        output = os.path.join(self.work_dir, name)
        command = [self.options.python, "-m", "pyust", "run", "--name", name, "-o", output,
                   "--no-count", "--subbuf-size", self.options.subbuf_size, "--num-subbuf",
                   str(self.options.num_subbuf), *RUN_FLAGS[mode], "--",
                   *self.workload_args(mode)]
        try:
            result = self._run(mode, command, name)
            result["foreign_sessions"] = sorted(set(others +
                                                    overhead.foreign_sessions(self.prefix)))
            self._describe_trace(result, output)
            return result
        finally:
            shutil.rmtree(output, ignore_errors=True)

    def measure_or_retry(self, mode: str) -> dict:
        """measure(mode); once more after a pause when it fails: on a shared
        machine the session daemon may be restarted under a run."""
        try:
            return self.measure(mode)
        except BenchError as error:
            print(f"warning: retrying once in {RETRY_PAUSE_S:.0f} s: {error}", file=sys.stderr,
                  flush=True)
            time.sleep(RETRY_PAUSE_S)
            overhead.check_sessiond()
            result = self.measure(mode)
            result["retried"] = True
            return result

    def _run(self, mode: str, command: list, session: str | None) -> dict:
        t0 = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=self.env,
                                  timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            done = None
        wall = time.perf_counter() - t0
        if done is None or done.returncode != 0:
            if session is not None:  # pyust run died or was killed: nothing may stay
                subprocess.run(["lttng", "destroy", session], capture_output=True, timeout=600)
            tail = "timed out" if done is None else "\n".join(
                (done.stderr or done.stdout).strip().splitlines()[-5:])
            raise BenchError(f"the {mode} run failed: {shlex.join(command)}\n{tail}")
        result = None
        for line in done.stdout.splitlines():
            if line.startswith("PYUST-BENCH "):
                result = json.loads(line[len("PYUST-BENCH "):])
        if result is None:
            raise BenchError(f"the {mode} run printed no result:\n{done.stdout[-500:]}")
        result.update(mode=mode, workload="fullstack", wall_seconds=wall,
                      outside_seconds=wall - result["seconds"], stderr=done.stderr)
        return result

    def _describe_trace(self, result: dict, output: str) -> None:
        stderr = result.pop("stderr")
        discarded = re.search(r"(\d+) discarded by LTTng", stderr)
        result["discarded"] = int(discarded.group(1)) if discarded else None
        result["kernel_note"] = next((line for line in stderr.splitlines()
                                      if "kernel events" in line), None)
        result["trace_bytes_ust"] = overhead.tree_size(os.path.join(output, "ust"))
        result["trace_bytes_kernel"] = sum(overhead.tree_size(os.path.join(output, d))
                                           for d in KERNEL_DIRS)
        if self.options.no_count:
            return
        ust = count_ust(output, result["pid"])
        if ust is not None:
            result.update({f"events_{key}": value for key, value in ust.items()})
        result["events_kernel"] = count_kernel(output)


# --- the summary ----------------------------------------------------------------

# Each time of a run: its summary's column prefix and the run's key.
TIME_KEYS = (("in", "seconds"), ("cpu", "cpu_seconds"), ("e2e", "wall_seconds"),
             ("out", "outside_seconds"))
EVENT_KEYS = ("writes", "emitted", "events_python", "events_cyg_profile", "events_native_other",
              "events_kernel", "events_foreign", "discarded", "trace_bytes_ust",
              "trace_bytes_kernel")


def _median_of(runs: list, key: str):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def summarise(results: list, modes: list) -> dict:
    """Per mode: medians and min-max of both times, ratios to untraced and to
    run, event counts; per layer: what it costs per event."""
    rows: dict = {}
    for mode in modes:
        runs = [r for r in results if r["mode"] == mode]
        if not runs:
            continue
        row: dict = {"runs": len(runs),
                     "runs_with_foreign_sessions": sum(bool(r.get("foreign_sessions"))
                                                       for r in runs)}
        for column, key in TIME_KEYS:
            values = [r[key] for r in runs]
            row[f"{column}_median_s"] = statistics.median(values)
            row[f"{column}_min_s"] = min(values)
            row[f"{column}_max_s"] = max(values)
        for key in EVENT_KEYS:
            value = _median_of(runs, key)
            if value is not None:
                row[f"{key}_median"] = value
        if any(r.get("discarded") for r in runs):
            row["discarded_total"] = sum(r.get("discarded") or 0 for r in runs)
        rows[mode] = row
    for reference in ("untraced", REFERENCE):
        base = rows.get(reference)
        if base is None:
            continue
        for mode, row in rows.items():
            for column, key in TIME_KEYS:
                row[f"{column}_vs_{reference}"] = (row[f"{column}_median_s"] /
                                                   base[f"{column}_median_s"])
                row[f"{column}_vs_{reference}_paired"] = overhead._paired(
                    results, "fullstack", mode, reference, key)
    return {"modes": rows, "per_event": per_event_costs(rows)}


def per_event_costs(rows: dict) -> dict:
    """ns per event of each layer, from the medians (in-process and cpu time):
    native frames and kernel events on top of run, the instrumentation alone
    per instrumented call (run - run-plain, over the cyg-profile entries)."""
    costs: dict = {}
    reference = rows.get(REFERENCE)
    if reference is None:
        return costs

    def over(mode: str, base: dict, events) -> None:
        row = rows.get(mode)
        if row is None or not events:
            return
        costs[mode] = {
            "events": events,
            "ns_per_event": (row["in_median_s"] - base["in_median_s"]) / events * 1e9,
            "cpu_ns_per_event": (row["cpu_median_s"] - base["cpu_median_s"]) / events * 1e9,
        }

    native_events = rows.get("native", {}).get("events_cyg_profile_median")
    kernel_events = rows.get("kernel", {}).get("events_kernel_median")
    over("native", reference, native_events)
    over("kernel", reference, kernel_events)
    writes = rows.get("kernel", {}).get("writes_median")
    if "kernel" in costs and writes:
        # Most kernel events are outside the loop (start-up, exit): per write(2)
        # of the loop is what a system call costs the traced code.
        kernel = rows["kernel"]
        costs["kernel"]["writes"] = writes
        costs["kernel"]["ns_per_write"] = (kernel["in_median_s"] -
                                           reference["in_median_s"]) / writes * 1e9
        costs["kernel"]["cpu_ns_per_write"] = (kernel["cpu_median_s"] -
                                               reference["cpu_median_s"]) / writes * 1e9
    if "native-kernel" in rows and native_events and kernel_events:
        both = rows["native-kernel"]
        over("native-kernel", reference, (both.get("events_cyg_profile_median") or 0) +
             (both.get("events_kernel_median") or 0))
    if "run-plain" in rows and native_events:
        # The instrumented module against the plain one, both under run (no
        # --native): per call of an instrumented function (entries = events / 2).
        row = rows["run-plain"]
        costs["instrumentation"] = {
            "calls": native_events / 2,
            "ns_per_call": (reference["in_median_s"] - row["in_median_s"]) /
            (native_events / 2) * 1e9,
            "cpu_ns_per_call": (reference["cpu_median_s"] - row["cpu_median_s"]) /
            (native_events / 2) * 1e9,
        }
    return costs


# The three times of a run, as the table shows them.
TIME_COLUMNS = (("in", "in-process (perf_counter)"), ("cpu", "in-process cpu (thread_time)"),
                ("e2e", "end to end (wall)"), ("out", "outside the loop"))


def _x(value) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _n(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def print_table(summary: dict, stream=sys.stdout) -> None:
    rows = summary["modes"]
    for column, title in TIME_COLUMNS:
        print(f"\n{title:27} {'median s':>9} {'min-max':>13} {'x untraced':>10} {'x run':>6} "
              f"{'paired':>6}", file=stream)
        for mode, row in rows.items():
            flag = row["runs_with_foreign_sessions"] if column == "in" else 0
            flag = f"  ({flag} runs overlapped other python:* sessions)" if flag else ""
            print(f"{LABELS[mode]:27} {row[f'{column}_median_s']:9.3f} "
                  f"{row[f'{column}_min_s']:6.3f}-{row[f'{column}_max_s']:<6.3f} "
                  f"{_x(row.get(f'{column}_vs_untraced')):>10} "
                  f"{_x(row.get(f'{column}_vs_run')):>6} "
                  f"{_x(row.get(f'{column}_vs_run_paired')):>6}{flag}", file=stream)
    print(f"\n{'mode (medians)':27} {'python':>10} {'cyg-profile':>11} {'dl/statedump':>12} "
          f"{'kernel':>9} {'foreign':>9} {'discarded':>9} {'ust MB':>7} {'kernel MB':>9}",
          file=stream)
    for mode, row in rows.items():
        if mode == "untraced":
            continue
        print(f"{LABELS[mode]:27} {_n(row.get('events_python_median')):>10} "
              f"{_n(row.get('events_cyg_profile_median')):>11} "
              f"{_n(row.get('events_native_other_median')):>12} "
              f"{_n(row.get('events_kernel_median')):>9} "
              f"{_n(row.get('events_foreign_median')):>9} "
              f"{_n(row.get('discarded_total', 0)):>9} "
              f"{row.get('trace_bytes_ust_median', 0) / 1e6:7.1f} "
              f"{row.get('trace_bytes_kernel_median', 0) / 1e6:9.1f}", file=stream)
    costs = summary["per_event"]
    if costs:
        print(file=stream)
    for mode in ("native", "kernel", "native-kernel"):
        if mode in costs:
            cost = costs[mode]
            print(f"{LABELS[mode]} over run: {cost['ns_per_event']:.0f} ns per added event "
                  f"(cpu {cost['cpu_ns_per_event']:.0f} ns), {_n(cost['events'])} events",
                  file=stream)
    if "ns_per_write" in costs.get("kernel", {}):
        cost = costs["kernel"]
        print(f"{LABELS['kernel']} over run: {cost['ns_per_write']:.0f} ns per write(2) of the "
              f"loop (cpu {cost['cpu_ns_per_write']:.0f} ns), {_n(cost['writes'])} writes",
              file=stream)
    if "instrumentation" in costs:
        cost = costs["instrumentation"]
        print(f"instrumentation without --native: {cost['ns_per_call']:.1f} ns per "
              f"instrumented call (cpu {cost['cpu_ns_per_call']:.1f} ns), "
              f"{_n(cost['calls'])} calls", file=stream)
    print("""
in-process: time.perf_counter around the workload's loop, in the traced
  process (median and min-max of the rounds); cpu: its thread_time.
end to end: the parent's wall clock around the whole command (pyust run
  --no-count: session set-up, perf start, the program, stop, destroy, perf
  data convert; for untraced the interpreter alone). outside the loop: end
  to end minus in-process, per run: what pyust run adds around the program.
x untraced, x run: median / the untraced (run) median. paired: median over
  the rounds of the ratio to run within the same round.
events: the workload's own (vpid), counted in the trace by babeltrace2;
  foreign: other processes' events that the session recorded too.""", file=stream)


# --- the command line -----------------------------------------------------------


def parse_args(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Measure what pyust run --native and --kernel cost on top of a "
                    "Python-only trace.")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"interleaved rounds (default {DEFAULT_ROUNDS}; "
                        f"{QUICK_ROUNDS} with --quick)")
    parser.add_argument("--scale", type=float, default=None,
                        help=f"workload size: {ITERATIONS_AT_SCALE_1:,} iterations at 1.0 "
                        "(the default)")
    parser.add_argument("--every", type=int, default=10, metavar="N",
                        help="one write(2) every N iterations (10; 0 for none)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_ROUNDS} rounds at scale {QUICK_SCALE}: a smoke test")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--json", metavar="FILE", help="write every run and the summary here")
    parser.add_argument("--subbuf-size", default="8M",
                        help="pyust run --subbuf-size (8M: large enough to lose nothing)")
    parser.add_argument("--num-subbuf", type=int, default=16,
                        help="pyust run --num-subbuf (16)")
    parser.add_argument("--no-count", action="store_true",
                        help="do not count the traces' events (babeltrace2, a few s per run)")
    parser.add_argument("--trace-dir", default=None,
                        help="where the extension and the traces go (a temporary directory)")
    parser.add_argument("--python", default=sys.executable, metavar="PATH",
                        help="the interpreter of pyust run and the workload (default: this one)")
    parser.add_argument("--pyust-path", default=None, metavar="DIR",
                        help="prepended to PYTHONPATH (default: the build scripts/setup made "
                        "for --python: build/python for Debian's /usr/bin/python3, "
                        "build-pyX.Y/python for any other)")
    parser.add_argument("--wait-quiet", type=float, default=120, metavar="SECONDS",
                        help="before each traced run, wait up to this long for other sessions "
                        "recording python:* to end (120); runs they overlap are flagged")
    parser.add_argument("--build", metavar="DIR", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.build:
        return options
    options.rounds = options.rounds or (QUICK_ROUNDS if options.quick else DEFAULT_ROUNDS)
    if options.scale is None:
        options.scale = QUICK_SCALE if options.quick else 1.0
    options.iterations = max(1, int(ITERATIONS_AT_SCALE_1 * options.scale))
    options.modes = [m for m in options.modes.split(",") if m]
    for mode in options.modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    if options.every < 0:
        parser.error("--every must be 0 or more")
    return options


def check_kernel_recording(modes: list, pyust_path: str) -> None:
    """--kernel modes need what pyust's perf path needs; say so before the
    first run rather than measure runs that record no kernel events."""
    if not any("kernel" in mode for mode in modes):
        return
    sys.path.insert(0, pyust_path or os.path.join(REPO, "python"))
    from pyust import kernel

    if not kernel.lttng_kernel_available():
        reason = kernel.perf_unavailable_reason()
        if reason is not None:
            raise BenchError(f"the kernel modes cannot record here: {reason} "
                             "(or leave them out: --modes untraced,run,run-plain,native)")


def main(argv: list) -> int:
    options = parse_args(argv)
    if options.build:
        build_main(options.build)
        return 0
    signal.signal(signal.SIGTERM, overhead._terminate)
    try:
        version = overhead.interpreter_version(options.python)
        if options.pyust_path is None:
            options.pyust_path = overhead.default_pyust_path(options.python, version)
        if any(mode != "untraced" for mode in options.modes):
            overhead.check_sessiond()
        check_kernel_recording(options.modes, options.pyust_path)
    except BenchError as error:
        print(f"fullstack.py: {error}", file=sys.stderr)
        return 1
    info = overhead.machine_info(options.python)
    info.update(overhead.build_info(options.pyust_path))
    print(f"machine: {info['cpu_model']}, {info['cores']} cores; Python {info['python']} "
          f"({options.python}); {info['lttng']}")
    print("pyust from: " + (options.pyust_path or "the interpreter's own sys.path") +
          f" (repository at {info['repo_head']}; native hook "
          f"{', '.join(info['pyust_native']) or 'not found there'})")
    print(f"{options.rounds} rounds, {options.iterations:,} iterations, a write every "
          f"{options.every}; modes {', '.join(options.modes)}; channels "
          f"{options.subbuf_size} x {options.num_subbuf} per CPU")
    load = os.getloadavg()[0]
    if load > 0.5 * (os.cpu_count() or 1):
        print(f"warning: the machine is busy (load {load:.1f} on {os.cpu_count()} cores): "
              "times are inflated and noisy", file=sys.stderr)
    runner = Runner(options)
    results: list = []
    started = time.time()
    try:
        built = runner.build()
        sites = instrumented_sites(built["instrumented"])
        print(f"extension: {os.path.basename(built['instrumented'])}, instrumented with "
              f"{' '.join(built['cflags'])} ({sites} instrumented call sites; plain: "
              f"{instrumented_sites(built['plain'])})")
        for round_index in range(options.rounds):
            shift = round_index % len(options.modes)
            for mode in options.modes[shift:] + options.modes[:shift]:
                result = runner.measure_or_retry(mode)
                result["round"] = round_index + 1
                result["loadavg_1min_after"] = os.getloadavg()[0]
                results.append(result)
                extra = ""
                if mode != "untraced":
                    extra = (f"  python {_n(result.get('events_python'))}, native "
                             f"{_n(result.get('events_cyg_profile'))}, kernel "
                             f"{_n(result.get('events_kernel'))}, foreign "
                             f"{_n(result.get('events_foreign'))}, discarded "
                             f"{_n(result.get('discarded'))}")
                    if result.get("foreign_sessions"):
                        extra += "  [other sessions recorded python:* too]"
                print(f"round {round_index + 1}/{options.rounds} {LABELS[mode]:27} "
                      f"{result['seconds']:7.3f} s in-process {result['wall_seconds']:7.3f} s "
                      f"end-to-end{extra}", flush=True)
    except BenchError as error:
        print(f"fullstack.py: {error}", file=sys.stderr)
        return 1
    finally:
        runner.close()
    if len({r["checksum"] for r in results}) > 1:
        print("fullstack.py: a traced run computed a different result than the others",
              file=sys.stderr)
        return 1
    summary = summarise(results, options.modes)
    print_table(summary)
    if any(r.get("discarded") for r in results):
        print("\nwarning: LTTng discarded events: the traced times are too low; rerun with a "
              "larger --subbuf-size or --num-subbuf", file=sys.stderr)
    if options.json:
        document = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": info,
            "config": {key: getattr(options, key) for key in (
                "rounds", "scale", "iterations", "every", "modes", "python", "pyust_path",
                "subbuf_size", "num_subbuf", "wait_quiet")},
            "labels": {mode: LABELS[mode] for mode in options.modes},
            "extension": dict(built, instrumented_call_sites=sites),
            "elapsed_s": time.time() - started,
            "loadavg_1min_at_start": load,
            "summary": summary,
            "runs": results,
        }
        pathlib.Path(options.json).write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nwrote {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
