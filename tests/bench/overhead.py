#!/usr/bin/env python3
"""pyust's overhead benchmark: how much a complete call/return trace costs.

    python3 tests/bench/overhead.py [--suite] [--rounds N] [--json FILE] [--quick]
                                    [--python PATH] [--pyust-path DIR]

Runs the workloads of workloads.py (W1 call-heavy, W3 mixed; W2 line-heavy
with --suite; W4 asyncio-heavy when --workloads names it) in these modes (the first seven by default, all with --suite):

  untraced            the workload alone
  empty-hook          an empty C profile function (PyEval_SetProfile), the
                      floor every C-level profiler pays on CPython <= 3.11;
                      compiled on the fly, skipped without a C compiler. On
                      3.12+ it is the legacy setprofile API (emulated over
                      sys.monitoring), not pyust's path: labelled as such
  cprofile            cProfile.Profile enabled around the workload
  pyust-dormant       pyust.start() with no LTTng session listening (since
                      the dormant hooks, pyust then sets no interpreter hook
                      at all: about the untraced cost)
  pyust               a real LTTng session records python:* with the contexts
                      vpid, vtid (what `pyust run` records)
  pyust-fast          the same session, with pyust.start(fast=True): per-thread
                      batches of compact records (python:batch events)
  pyust-filtered      the same session, with pyust.start(modules=
                      "workloads_small"): only W3's small module (a few
                      thousand calls) is traced, every other call is
                      filtered out (W1 has no call there: all filtered)
  pyust-lines         the same session, with pyust.start(lines=True): a
                      python:line event per line too (W2 and W3 only)
  pyust-fast-lines    the same session, with pyust.start(fast=True, lines=True)
  yappi, line-profiler, viztracer, viztracer-async
                      the peers (peers.py), each when the children's
                      interpreter can import it; otherwise the run says why
                      and goes on without it

--suite is issue 6's benchmark in one command: every workload and mode, 7
rounds at scale 1.0 (with --quick: 2 rounds at scale 0.25, a smoke test), and
the targets of issue 6 (targets.py) judged PASS/FAIL on CPython 3.11,
reported without a verdict on other versions.

Each measurement is one fresh interpreter (this file with --child) that warms
the workload up, then times the workload alone with time.perf_counter. Rounds
are interleaved (every mode once per round, in a rotating order) and the table
shows medians, the ratio to the untraced median of the same run, and pyust
against cProfile (and the fast mode against every peer). For every pyust run
it also reports the events the hook handed to LTTng (pyust.emitted_events();
records in fast mode), those LTTng discarded (the channel's discarded_events
after `lttng stop`; batches in fast mode), and the trace's size.

Sessions are named pyust-bench-<pid>-<n>, record the measured child's pid
alone (lttng track), are destroyed however the run ends, and their trace
directories deleted. Needs a reachable lttng-sessiond (as root:
`lttng-sessiond --daemonize`). Other sessions enabling python:* at the same
time would record this benchmark's children too: the script warns about them.

The children run --python (default: this interpreter) with --pyust-path
prepended to PYTHONPATH (default: the build scripts/setup made for the
children's interpreter: build/python for Debian's /usr/bin/python3,
build-pyX.Y/python for any other), e.g.
    overhead.py --python ~/.pyenv/versions/3.12.1/bin/python3

To profile one mode, run a single measurement under a profiler, e.g.
    overhead.py --rounds 1 --modes pyust --workloads W1 --child-prefix 'perf record -g -o p.data'
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

import peers
import targets

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The modes of a plain run (the figures of issues 2 and 3); --suite adds the
# line modes and the peers (issue 6).
BASE_MODES = ("untraced", "empty-hook", "cprofile", "pyust-dormant", "pyust", "pyust-fast",
              "pyust-filtered")
LINE_MODES = ("pyust-lines", "pyust-fast-lines")
MODES = BASE_MODES + LINE_MODES + peers.PEERS
LABELS = {
    "untraced": "untraced",
    "empty-hook": "empty C hook (floor)",
    "cprofile": "cProfile",
    "pyust-dormant": "pyust, no session",
    "pyust": "pyust (LTTng session)",
    "pyust-fast": "pyust --fast (session)",
    "pyust-filtered": "pyust filtered (session)",
    "pyust-lines": "pyust --lines (session)",
    "pyust-fast-lines": "pyust --fast --lines",
    **peers.LABELS,
}
# What each pyust mode passes to pyust.start().
PYUST_START = {
    "pyust-dormant": {},
    "pyust": {},
    "pyust-fast": {"fast": True},
    "pyust-filtered": {"modules": "workloads_small"},
    "pyust-lines": {"lines": True},
    "pyust-fast-lines": {"fast": True, "lines": True},
}
# On 3.12+ PyEval_SetProfile is a legacy API emulated over sys.monitoring;
# pyust does not use it there, so it is no floor of pyust's cost.
LEGACY_HOOK_LABEL = "legacy setprofile hook"
# Modes that record into a real LTTng session, and those of them that write
# batches (python:batch events, many records each).
RECORDING_MODES = ("pyust", "pyust-fast", "pyust-filtered", "pyust-lines", "pyust-fast-lines")
BATCHED_MODES = ("pyust-fast", "pyust-fast-lines")
# Modes whose cost is reported per emitted event (not pyust-filtered: most of
# its calls are filtered out, and emit nothing).
PER_EVENT_MODES = ("pyust", "pyust-fast", "pyust-lines", "pyust-fast-lines")
# Fewer events than this (W2 without lines: a single call) say nothing per event.
MIN_EVENTS = 10_000
# The per-run table's short name of each recording mode.
RUN_NAMES = {"pyust": "full", "pyust-fast": "fast", "pyust-filtered": "filtered",
             "pyust-lines": "lines", "pyust-fast-lines": "fast+lns"}
# What pyust-filtered traces: the small module of W3 (workloads_small.py).
FILTER_MODULE = PYUST_START["pyust-filtered"]["modules"]
# Issue 3: with one small module traced and every other call filtered out,
# the run costs at most 1.10x untraced on 3.12+, and on 3.11 (and earlier, the
# setprofile backend) at most the empty hook's cost plus 5%.
TARGET_MONITORING = 1.10
TARGET_SETPROFILE_MARGIN = 1.05
# The workloads issue 3 judged (W2 has one call: nothing to filter).
FILTERED_TARGET_WORKLOADS = ("W1", "W3")
BASE_WORKLOADS = ("W1", "W3")
# --suite's; W4 (asyncio, issue 29) runs when --workloads names it.
SUITE_WORKLOADS = ("W1", "W2", "W3")
WORKLOADS = (*SUITE_WORKLOADS, "W4")
# The workloads each mode runs on, where that is not all of them (see
# OVERHEAD.md): W2 is a single call, so call tracers have next to nothing to
# do there, but every mode runs it (the dormant target covers it and the
# peers' line costs show there); the standard mode with lines would write
# GBs per W1 run for nothing W2 does not already show.
MODE_WORKLOADS = {
    "pyust-lines": ("W2", "W3"),
}
CONTEXTS = ("vpid", "vtid")  # pyust.lttng.CONTEXTS: what `pyust run` records
CHANNEL = "bench"
# The child's handshake with a parent that records it: it prints READY and
# its pid, and waits for a line on stdin before it loads pyust.
HANDSHAKE = "PYUST_BENCH_HANDSHAKE"
READY = "PYUST-BENCH-READY"
WARM_UP_SCALE = 0.02
QUICK_SCALE = 0.25
QUICK_ROUNDS = 2
ROUNDS = 7

_MI = "{https://lttng.org/xml/ns/lttng-mi}"

EMPTY_HOOK_MODULE = "_bench_empty_hook"
EMPTY_HOOK_SOURCE = r"""
#include <Python.h>
static int empty(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) { return 0; }
static PyObject *start(PyObject *m, PyObject *a) { PyEval_SetProfile(empty, NULL); Py_RETURN_NONE; }
static PyObject *stop(PyObject *m, PyObject *a) { PyEval_SetProfile(NULL, NULL); Py_RETURN_NONE; }
static PyMethodDef methods[] = {
    {"start", start, METH_NOARGS, ""}, {"stop", stop, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bench_empty_hook", NULL, -1, methods};
PyMODINIT_FUNC PyInit__bench_empty_hook(void) { return PyModule_Create(&module); }
"""


class BenchError(Exception):
    """The benchmark cannot run; the message says what to fix."""


# --- the child: one measurement ----------------------------------------------


def child_main(mode: str, workload: str, scale: float) -> None:
    """Runs one workload once in this interpreter and prints a JSON line."""
    import workloads
    import workloads_small

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    function = workloads.WORKLOADS[workload]
    # Warm-up: imports, compiled regular expressions, caches, code objects'
    # specialisation all happen before the measurement, in every mode.
    function(WARM_UP_SCALE)
    result: dict = {"mode": mode, "workload": workload, "scale": scale}
    # Each mode is a pair of calls put around the measurement, never inside it.
    if mode == "untraced":
        enable = disable = lambda: None
    elif mode == "empty-hook":
        sys.path.insert(0, os.environ["PYUST_BENCH_HOOK_DIR"])
        hook = __import__(EMPTY_HOOK_MODULE)
        enable, disable = hook.start, hook.stop
    elif mode == "cprofile":
        import cProfile

        profiler = cProfile.Profile()
        enable, disable = profiler.enable, profiler.disable
    elif mode in PYUST_START:
        if os.environ.get(HANDSHAKE):  # the parent's session tracks this pid first
            print(f"{READY} {os.getpid()}", flush=True)
            sys.stdin.readline()
        import pyust

        # start() loads the native hook, which registers with the session
        # daemon and receives the enabled events before it returns.
        def enable():
            pyust.start(**PYUST_START[mode])

        disable = pyust.stop
    elif mode in peers.PEERS:
        enable, disable, result["peer"] = peers.hooks(mode, [workloads, workloads_small])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    enable()
    t0, c0 = time.perf_counter(), time.thread_time()
    checksum = function(scale)
    t1, c1 = time.perf_counter(), time.thread_time()
    disable()
    if mode in PYUST_START:
        result["emitted"] = pyust.emitted_events()
        result["backend"] = pyust._hook.backend()
    result["seconds"] = t1 - t0
    result["cpu_seconds"] = c1 - c0
    result["checksum"] = checksum
    print("PYUST-BENCH " + json.dumps(result), flush=True)


# --- LTTng sessions through the lttng command ----------------------------------


def lttng(args: list, *, mi: bool = False, timeout: float = 600) -> str:
    """Runs `lttng [--mi xml] ARGS`; returns its output, raises BenchError."""
    command = ["lttng"] + (["--mi", "xml"] if mi else []) + args
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise BenchError("lttng is not installed: apt-get install lttng-tools") from None
    except subprocess.TimeoutExpired:
        raise BenchError(f"`{shlex.join(command)}` did not answer in {timeout:.0f} s") from None
    if done.returncode != 0:
        text = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise BenchError(f"`{shlex.join(command)}` failed: {text[-1] if text else done.returncode}")
    return done.stdout


def check_sessiond() -> None:
    """Raises BenchError when no session daemon is reachable."""
    try:
        lttng(["list"], mi=True, timeout=60)
    except BenchError as error:
        if "session daemon" in str(error).lower():
            raise BenchError("no LTTng session daemon is reachable: start one with "
                             "`lttng-sessiond --daemonize`") from None
        raise


def _records_python(name: str) -> bool:
    try:
        root = ElementTree.fromstring(lttng(["list", name], mi=True, timeout=60))
    except (BenchError, ElementTree.ParseError):
        return False  # gone in the meantime
    for domain in root.iter(_MI + "domain"):
        if domain.findtext(_MI + "type") != "UST":
            continue
        if domain.find(f"{_MI}process_attr_trackers/{_MI}vpid_process_attr_tracker") is not None:
            continue  # it records the pids it tracks alone (as ours do), not our children
        for event in domain.iter(_MI + "event"):
            name_ = event.findtext(_MI + "name") or ""
            if event.findtext(_MI + "enabled") == "true" and (
                    name_.startswith("python") or name_.startswith("*")):
                return True
    return False


def foreign_sessions(own_prefix: str) -> list:
    """Active sessions, other than ours, that enable python events: they
    would record (and slow down) this benchmark's children too, the
    "no session" mode included."""
    root = ElementTree.fromstring(lttng(["list"], mi=True, timeout=60))
    names = []
    for session in root.iter(_MI + "session"):
        name = session.findtext(_MI + "name") or ""
        if (session.findtext(_MI + "enabled") == "true" and not name.startswith(own_prefix)
                and _records_python(name)):
            names.append(name)
    return names


class Session:
    """One benchmark session: python:* with the contexts of `pyust run`, for
    the processes that track() names only."""

    def __init__(self, name: str, output: str, subbuf_size: str, num_subbuf: int,
                 events: str = "python:*", contexts: tuple = CONTEXTS) -> None:
        self.name = name
        self.output = output
        self.is_created = False
        lttng(["create", name, "--output", output])
        self.is_created = True
        lttng(["enable-channel", "--userspace", "--session", name, "--subbuf-size", subbuf_size,
               "--num-subbuf", str(num_subbuf), CHANNEL])
        lttng(["enable-event", "--userspace", "--session", name, "--channel", CHANNEL, events])
        types = []
        for context in contexts:
            types += ["--type", context]
        if types:
            lttng(["add-context", "--userspace", "--session", name, "--channel", CHANNEL] + types)
        lttng(["untrack", "--userspace", "--session", name, "--vpid", "--all"])

    def track(self, pid: int) -> None:
        """Records the process pid alone (the session records no process
        until then): other programs that pyust traces on the machine neither
        land in the trace nor wake up from their dormant state."""
        lttng(["track", "--userspace", "--session", self.name, "--vpid", str(pid)])

    def start(self) -> None:
        lttng(["start", self.name])

    def stop(self) -> None:
        lttng(["stop", self.name])

    def counters(self) -> dict:
        """discarded_events and lost_packets summed over the session's channels."""
        root = ElementTree.fromstring(lttng(["list", self.name], mi=True))
        totals = {"discarded": 0, "lost_packets": 0}
        for node in root.iter(_MI + "discarded_events"):
            totals["discarded"] += int(node.text or 0)
        for node in root.iter(_MI + "lost_packets"):
            totals["lost_packets"] += int(node.text or 0)
        return totals

    def destroy(self) -> None:
        if self.is_created:
            self.is_created = False
            lttng(["destroy", self.name])


def tree_size(path: str) -> int:
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                pass
    return total


def count_recorded(trace: str) -> int | None:
    """Events in the trace, by babeltrace2's counter sink (slow: --verify)."""
    if shutil.which("babeltrace2") is None:
        return None
    done = subprocess.run(["babeltrace2", trace, "--component=sink.utils.counter"],
                          capture_output=True, text=True)
    count = None  # the sink prints running totals: the last one is the total
    for line in done.stdout.splitlines():
        words = line.split()
        if words[1:] == ["Event", "messages"] and words[0].isdigit():
            count = int(words[0])
    return count


# --- the parent: rounds, modes, report ---------------------------------------


def build_empty_hook(python: str, directory: str) -> str | None:
    """Compiles the empty-hook extension for `python` into directory;
    returns why not (no compiler, no headers), or None when it is built."""
    query = ("import sysconfig; print(sysconfig.get_paths()['include']); "
             "print(sysconfig.get_config_var('EXT_SUFFIX')); "
             "print(sysconfig.get_config_var('CC') or 'cc')")
    done = subprocess.run([python, "-c", query], capture_output=True, text=True)
    if done.returncode != 0:
        return "cannot ask the interpreter for its headers"
    include, suffix, cc = done.stdout.splitlines()[:3]
    compiler = shlex.split(cc)[:1] or ["cc"]
    if shutil.which(compiler[0]) is None:
        return f"no C compiler ({compiler[0]})"
    if not os.path.isfile(os.path.join(include, "Python.h")):
        return f"no Python.h in {include}"
    source = os.path.join(directory, EMPTY_HOOK_MODULE + ".c")
    with open(source, "w") as stream:
        stream.write(EMPTY_HOOK_SOURCE)
    target = os.path.join(directory, EMPTY_HOOK_MODULE + suffix)
    done = subprocess.run(compiler + ["-O2", "-shared", "-fPIC", "-I", include, source, "-o",
                                      target], capture_output=True, text=True)
    if done.returncode != 0:
        return f"the compiler failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


class Runner:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.session_count = 0
        self.prefix = f"pyust-bench-{os.getpid()}-"
        self.is_waiting = False
        self.work_dir = tempfile.mkdtemp(prefix="pyust-bench-", dir=options.trace_dir)
        self.env = dict(os.environ)
        if options.pyust_path:
            self.env["PYTHONPATH"] = os.pathsep.join(
                [options.pyust_path] + [p for p in [self.env.get("PYTHONPATH")] if p])

    def close(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def prepare_empty_hook(self) -> str | None:
        hook_dir = os.path.join(self.work_dir, "empty-hook")
        os.mkdir(hook_dir)
        self.env["PYUST_BENCH_HOOK_DIR"] = hook_dir
        return build_empty_hook(self.options.python, hook_dir)

    def child(self, mode: str, workload: str, session: Session | None = None) -> dict:
        """One measurement in a fresh interpreter. With a session, the child
        waits before it loads pyust until the session tracks its pid."""
        command = [self.options.python, os.path.abspath(__file__), "--child", mode, workload,
                   str(self.options.scale)]
        command = shlex.split(self.options.child_prefix) + command
        env = self.env if session is None else dict(self.env, **{HANDSHAKE: "1"})
        with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) as process:
            try:
                if session is not None:
                    for line in process.stdout:  # the child's pid, under --child-prefix too
                        if line.startswith(READY + " "):
                            session.track(int(line.split()[1]))
                            break
                    try:
                        process.stdin.write("go\n")
                        process.stdin.flush()
                    except OSError:
                        pass  # it died: its status says so below
                stdout, stderr = process.communicate()
            except BaseException:
                process.kill()
                raise
        for line in stdout.splitlines():
            if line.startswith("PYUST-BENCH "):
                if process.returncode == 0:
                    return json.loads(line[len("PYUST-BENCH "):])
        tail = "\n".join((stderr or stdout).strip().splitlines()[-5:])
        raise BenchError(f"the {mode} {workload} child failed (status {process.returncode}):\n"
                         f"{tail}")

    def wait_until_alone(self) -> list:
        """Waits (up to --wait-quiet seconds) until no other session records
        python events; returns those still recording."""
        deadline = time.monotonic() + self.options.wait_quiet
        while True:
            others = foreign_sessions(self.prefix)
            if not others or time.monotonic() >= deadline:
                break
            if not self.is_waiting:
                print(f"waiting for other sessions recording python:* to end: "
                      f"{', '.join(others)}", file=sys.stderr, flush=True)
                self.is_waiting = True
            time.sleep(1.0)
        self.is_waiting = False
        if others:
            print(f"warning: sessions {', '.join(others)} record python:* too: this run "
                  "is marked foreign_sessions", file=sys.stderr, flush=True)
        return others

    def measure(self, mode: str, workload: str) -> dict:
        if not mode.startswith("pyust"):
            return self.child(mode, workload)
        others = self.wait_until_alone()
        if mode == "pyust-dormant":
            result = self.child(mode, workload)
            result["foreign_sessions"] = sorted(set(others + foreign_sessions(self.prefix)))
            return result
        self.session_count += 1
        name = f"{self.prefix}{self.session_count}"
        output = os.path.join(self.work_dir, name)
        session = None
        try:
            session = Session(name, output, self.options.subbuf_size, self.options.num_subbuf,
                              self.options.events, self.options.contexts)
            session.start()
            result = self.child(mode, workload, session)
            t0 = time.perf_counter()
            session.stop()
            result["foreign_sessions"] = sorted(set(others + foreign_sessions(self.prefix)))
            result["stop_seconds"] = time.perf_counter() - t0
            result.update(session.counters())
            if mode in BATCHED_MODES:
                # discarded counts python:batch events, each of many records.
                result["discarded_unit"] = "batches"
                result["recorded"] = result["emitted"] if not result["discarded"] else None
            else:
                result["recorded"] = result["emitted"] - result["discarded"]
            result["trace_bytes"] = tree_size(output)
            if self.options.verify:
                result["counted"] = count_recorded(output)
            return result
        finally:
            try:
                if session is not None:
                    session.destroy()
                else:  # create itself failed half-way: make sure nothing stays
                    subprocess.run(["lttng", "destroy", name], capture_output=True)
            finally:
                shutil.rmtree(output, ignore_errors=True)


LSCPU_FIELDS = ("Architecture", "Model name", "CPU(s)", "Thread(s) per core",
                "Core(s) per socket", "Socket(s)", "CPU max MHz", "Hypervisor vendor",
                "Virtualization type", "L2 cache", "L3 cache")


def machine_info(python: str) -> dict:
    """The machine and the children's interpreter, for the report."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as stream:
            for line in stream:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        lttng_version = subprocess.run(["lttng", "--version"], capture_output=True,
                                       text=True).stdout.strip()
    except OSError:
        lttng_version = "?"
    query = "import platform; print(platform.python_version(), platform.python_implementation())"
    fields: dict = {}
    try:
        lscpu = subprocess.run(["lscpu", "--json"], capture_output=True, text=True).stdout
        entries = list(json.loads(lscpu)["lscpu"])
    except (OSError, ValueError, KeyError):
        entries = []
    while entries:  # newer lscpu nests fields under "children"
        entry = entries.pop()
        fields[entry.get("field", "").rstrip(":")] = entry.get("data")
        entries += entry.get("children", [])
    version = subprocess.run([python, "-c", query], capture_output=True, text=True).stdout.split()
    return {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "python": version[0] if version else "?",
        "python_implementation": version[1] if len(version) > 1 else "?",
        "python_executable": python,
        "kernel": platform.release(),
        "lttng": lttng_version,
        "lscpu": {key: fields[key] for key in LSCPU_FIELDS if key in fields},
    }


def build_info(pyust_path: str, python: str | None = None) -> dict:
    """Which pyust the children load: the repository's commit and the native
    hook's modification time (builds change while others work on the tree).
    Without pyust_path, where python imports pyust from (an installed one)."""
    done = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    info = {"repo_head": done.stdout.strip() or "?", "pyust_native": []}
    if not pyust_path and python:
        query = "import os, pyust; print(os.path.dirname(os.path.dirname(pyust.__file__)))"
        done = subprocess.run([python, "-c", query], capture_output=True, text=True)
        pyust_path = info["pyust_installed_in"] = done.stdout.strip() or None
    directory = os.path.join(pyust_path, "pyust") if pyust_path else ""
    if os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if name.startswith("_native") and name.endswith(".so"):
                path = os.path.join(directory, name)
                stamp = datetime.datetime.fromtimestamp(os.stat(path).st_mtime)
                info["pyust_native"].append(f"{path} ({stamp.isoformat(timespec='seconds')})")
    return info


def _paired(results: list, workload: str, mode: str, reference: str, key: str) -> float | None:
    """Median over rounds of mode / reference within the same round: the two
    runs of a round are seconds apart, so slow drifts of the machine's load
    cancel out."""
    times: dict = {}
    for r in results:
        if r["workload"] == workload and r["mode"] in (mode, reference):
            times.setdefault(r["round"], {})[r["mode"]] = r[key]
    ratios = [t[mode] / t[reference] for t in times.values() if mode in t and reference in t]
    return statistics.median(ratios) if ratios else None


def _versus(results: list, rows: dict, workload: str, mode: str, reference: str) -> dict:
    """mode against reference (same run): the four estimators."""
    return {
        "ratio": rows[mode]["median_s"] / rows[reference]["median_s"],
        "paired_ratio": _paired(results, workload, mode, reference, "seconds"),
        "min_ratio": rows[mode]["min_s"] / rows[reference]["min_s"],
        "cpu_ratio": rows[mode]["median_cpu_s"] / rows[reference]["median_cpu_s"],
    }


def filtered_target(results: list, workload: str, rows: dict,
                    backend: str | None) -> dict | None:
    """Issue 3's target for pyust-filtered, judged on the median ratio to
    untraced: at most 1.10x with sys.monitoring (3.12+); with the setprofile
    backend (<= 3.11) at most the empty hook's ratio x 1.05."""
    filtered = rows.get("pyust-filtered")
    if filtered is None or "ratio" not in filtered:
        return None
    if backend == "monitoring":
        limit, rule = TARGET_MONITORING, f"filtered <= {TARGET_MONITORING:.2f}x untraced"
    elif "empty-hook" in rows:
        limit = rows["empty-hook"]["ratio"] * TARGET_SETPROFILE_MARGIN
        rule = f"filtered <= empty hook x {TARGET_SETPROFILE_MARGIN:.2f}"
    else:
        return {"rule": "filtered <= empty hook x 1.05", "met": None,
                "why": "the empty-hook mode did not run"}
    target = {
        "rule": rule,
        "limit": limit,
        "ratio": filtered["ratio"],
        "paired_ratio": filtered.get("paired_ratio"),
        "cpu_ratio": filtered.get("cpu_ratio"),
        "met": filtered["ratio"] <= limit,
    }
    if backend != "monitoring":
        # The same rule read directly: filtered / empty hook <= 1.05.
        target["vs_empty_hook"] = _versus(results, rows, workload, "pyust-filtered",
                                          "empty-hook")
    return target


def summarise(results: list, modes: list, workloads: list) -> dict:
    """Per workload and mode: medians, ratios to untraced, events; pyust
    (full and filtered) against cProfile; issue 3's filtered target."""
    summary: dict = {}
    for workload in workloads:
        rows: dict = {}
        for mode in modes:
            runs = [r for r in results if r["workload"] == workload and r["mode"] == mode]
            if not runs:
                continue
            seconds = [r["seconds"] for r in runs]
            row = {
                "runs": len(runs),
                "median_s": statistics.median(seconds),
                "min_s": min(seconds),
                "max_s": max(seconds),
                "median_cpu_s": statistics.median(r["cpu_seconds"] for r in runs),
                "runs_with_foreign_sessions": sum(bool(r.get("foreign_sessions")) for r in runs),
            }
            if "emitted" in runs[0]:
                row["emitted_median"] = statistics.median(r["emitted"] for r in runs)
            if mode in RECORDING_MODES:
                row["discarded_total"] = sum(r["discarded"] for r in runs)
                recorded = [r["recorded"] for r in runs if r["recorded"] is not None]
                row["recorded_median"] = statistics.median(recorded) if recorded else None
                row["trace_bytes_median"] = statistics.median(r["trace_bytes"] for r in runs)
                if row["emitted_median"]:
                    # Issue 6's measure: the trace's size over the events
                    # (in fast mode the records) the hook emitted.
                    row["bytes_per_event"] = row["trace_bytes_median"] / row["emitted_median"]
            rows[mode] = row
        entry: dict = {"modes": rows}
        summary[workload] = entry
        base = rows.get("untraced")
        if base is not None:
            for mode, row in rows.items():
                row["ratio"] = row["median_s"] / base["median_s"]
                row["paired_ratio"] = _paired(results, workload, mode, "untraced", "seconds")
                row["min_ratio"] = row["min_s"] / base["min_s"]
                row["cpu_ratio"] = row["median_cpu_s"] / base["median_cpu_s"]
                # Per emitted event: meaningless when most calls are filtered out,
                # or when nothing records (the dormant hooks emit next to nothing).
                if row.get("emitted_median", 0) >= MIN_EVENTS and mode in PER_EVENT_MODES:
                    events = row["emitted_median"]
                    row["ns_per_event_over_untraced"] = (
                        (row["median_s"] - base["median_s"]) / events * 1e9)
                    row["cpu_ns_per_event_over_untraced"] = (
                        (row["median_cpu_s"] - base["median_cpu_s"]) / events * 1e9)
        if ("pyust" in rows and "pyust-dormant" in rows
                and rows["pyust"].get("emitted_median", 0) >= MIN_EVENTS):
            # What recording costs on top of pyust with no session (the hook
            # and LTTng together, now that a dormant pyust sets no hook).
            events = rows["pyust"]["emitted_median"]
            dormant = rows["pyust-dormant"]
            rows["pyust"]["ns_per_event_over_dormant"] = (
                (rows["pyust"]["median_s"] - dormant["median_s"]) / events * 1e9)
            rows["pyust"]["cpu_ns_per_event_over_dormant"] = (
                (rows["pyust"]["median_cpu_s"] - dormant["median_cpu_s"]) / events * 1e9)
        if "pyust" in rows and "cprofile" in rows:
            entry["pyust_vs_cprofile"] = _versus(results, rows, workload, "pyust", "cprofile")
        # Issue 6: the fast mode against every peer that ran.
        versus_peers = {peer: _versus(results, rows, workload, "pyust-fast", peer)
                        for peer in ("cprofile",) + peers.PEERS
                        if "pyust-fast" in rows and peer in rows}
        if versus_peers:
            entry["fast_vs_peers"] = versus_peers
        if "pyust-filtered" in rows and "cprofile" in rows:
            entry["pyust_filtered_vs_cprofile"] = _versus(results, rows, workload,
                                                          "pyust-filtered", "cprofile")
        backends = {r["backend"] for r in results
                    if r["workload"] == workload and r.get("backend")}
        target = filtered_target(results, workload, rows,
                                 backends.pop() if len(backends) == 1 else None)
        if target is not None and workload in FILTERED_TARGET_WORKLOADS:
            entry["filtered_target"] = target
    return summary


def w2_line_events(summary: dict, scale: float) -> dict | None:
    """What the --lines modes emitted on W2 against what it should make
    (workloads.w2_lines: 4 line events per iteration), or None without them."""
    import workloads

    rows = summary.get("W2", {}).get("modes", {})
    emitted = {m: rows[m]["emitted_median"] for m in LINE_MODES if m in rows}
    if not emitted:
        return None
    return {"expected": 4 * int(workloads.W2_ITERATIONS * scale), "emitted": emitted}


_x = targets.ratio_text


def print_table(summary: dict, results: list, labels: dict = LABELS,
                stream=sys.stdout) -> None:
    print(f"\n{'workload':8} {'mode':24} {'median s':>8} {'min s':>7} {'ratio':>6} "
          f"{'paired':>6} {'min':>6} {'cpu s':>7} {'cpu':>6} {'cpu ns/ev':>9}", file=stream)
    for workload, entry in summary.items():
        for mode, row in entry["modes"].items():
            per_event = row.get("cpu_ns_per_event_over_untraced")
            per_event = "" if per_event is None else f"{per_event:.1f}"
            flag = row["runs_with_foreign_sessions"]
            flag = f"  ({flag} runs overlapped other python:* sessions)" if flag else ""
            print(f"{workload:8} {labels[mode]:24} {row['median_s']:8.3f} {row['min_s']:7.3f} "
                  f"{_x(row.get('ratio')):>6} {_x(row.get('paired_ratio')):>6} "
                  f"{_x(row.get('min_ratio')):>6} {row['median_cpu_s']:7.3f} "
                  f"{_x(row.get('cpu_ratio')):>6} {per_event:>9}{flag}", file=stream)
        recording = entry["modes"].get("pyust", {})
        if "cpu_ns_per_event_over_dormant" in recording:
            print(f"{workload:8} {'pyust - no session':24} {'':8} {'':7} {'':6} {'':6} {'':6} "
                  f"{'':7} {'':6} {recording['cpu_ns_per_event_over_dormant']:9.1f}",
                  file=stream)
        comparisons = [(entry.get("pyust_vs_cprofile"), "pyust / cProfile"),
                       (entry.get("pyust_filtered_vs_cprofile"), "filtered / cProfile")]
        # A peer by its mode's name (viztracer and viztracer-async share a first word).
        comparisons += [
            (versus, f"fast / {peer if peer in peers.PEERS else labels[peer].split()[0]}")
            for peer, versus in entry.get("fast_vs_peers", {}).items()]
        for versus, label in comparisons:
            if versus:
                print(f"{workload:8} {label:24} {'':8} {'':7} {_x(versus['ratio']):>6} "
                      f"{_x(versus['paired_ratio']):>6} {_x(versus['min_ratio']):>6} {'':7} "
                      f"{_x(versus['cpu_ratio']):>6}", file=stream)
    print("""
median s, min s: time.perf_counter around the workload, in the child.
ratio: median / untraced median. paired: median over rounds of the ratio within
  a round (robust to slow changes of the machine's load). min: min / untraced min.
cpu s, cpu: the child's thread_time (median) and its ratio: less sensitive to
  other load on the machine.
cpu ns/ev: (cpu - untraced cpu) / events the hook emitted (calls, returns,
  registrations, and lines in the --lines modes; in --fast the records of its
  batches; the hook also sees C calls, which it does not emit); on the row
  'pyust - no session', what a session adds per event over pyust with no
  session (which sets no hook: the hook and the recording together).""",
          file=stream)
    for workload, entry in summary.items():
        target = entry.get("filtered_target")
        if target is None:
            continue
        if target["met"] is None:
            print(f"\n{workload} filtered target ({target['rule']}): not judged, {target['why']}",
                  file=stream)
            continue
        print(f"\n{workload} filtered target ({target['rule']}): filtered {target['ratio']:.3f}x "
              f"(paired {_x(target['paired_ratio'])}, cpu {_x(target['cpu_ratio'])}) against "
              f"a limit of {target['limit']:.3f}x: {'MET' if target['met'] else 'MISSED'}",
              file=stream)
        versus = target.get("vs_empty_hook")
        if versus:
            print(f"{workload} filtered / empty hook: {_x(versus['ratio'])} (paired "
                  f"{_x(versus['paired_ratio'])}, min {_x(versus['min_ratio'])}, cpu "
                  f"{_x(versus['cpu_ratio'])}; the target is <= 1.05x)", file=stream)
    runs = [r for r in results if r["mode"] in RECORDING_MODES]
    if any(r["mode"] in BATCHED_MODES for r in runs):
        print("\nfast and fast+lns runs: emitted counts records; discarded counts python:batch "
              "events (up to 3.5 KiB of records each), so recorded is known only without "
              "discards.", file=stream)
    if runs:
        print(f"\n{'workload':8} {'mode':8} {'round':>5} {'emitted':>11} {'discarded':>10} "
              f"{'recorded':>11} {'lost pkts':>9} {'trace MB':>9} {'B/event':>8} "
              f"{'stop s':>7}" + (f" {'counted':>11}" if "counted" in runs[0] else ""),
              file=stream)
        for r in runs:
            events = r["recorded"] or r["emitted"]
            per_event = r["trace_bytes"] / events if events else 0.0
            recorded = "?" if r["recorded"] is None else r["recorded"]
            line = (f"{r['workload']:8} {RUN_NAMES[r['mode']]:8} "
                    f"{r['round']:5d} {r['emitted']:11d} {r['discarded']:10d} "
                    f"{recorded:>11} {r['lost_packets']:9d} "
                    f"{r['trace_bytes'] / 1e6:9.1f} {per_event:8.1f} {r['stop_seconds']:7.2f}")
            if "counted" in r:
                line += f" {r['counted'] if r['counted'] is not None else '?':>11}"
            print(line, file=stream)


def parse_args(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Measure pyust's overhead against untraced runs and cProfile.")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"interleaved rounds (default {ROUNDS}; {QUICK_ROUNDS} with --quick)")
    parser.add_argument("--json", metavar="FILE", help="write every run and the summary here")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_ROUNDS} rounds at scale {QUICK_SCALE}: a smoke test")
    parser.add_argument("--suite", action="store_true",
                        help="the whole suite: every workload and every mode, the peers "
                        "that the children can import included, and the targets' verdicts "
                        f"({ROUNDS} rounds at scale 1.0; with --quick a smoke test of it)")
    parser.add_argument("--scale", type=float, default=None,
                        help="workload size (1.0: about 1-2 s untraced each)")
    parser.add_argument("--modes", default=None,
                        help=f"comma-separated subset of {','.join(MODES)} (default "
                        f"{','.join(BASE_MODES)}; all with --suite)")
    parser.add_argument("--workloads", default=None,
                        help=f"comma-separated subset of {','.join(WORKLOADS)} (default "
                        f"{','.join(BASE_WORKLOADS)}; all with --suite)")
    parser.add_argument("--subbuf-size", default="8M", help="LTTng sub-buffer size (8M)")
    parser.add_argument("--num-subbuf", type=int, default=16,
                        help="LTTng sub-buffers per CPU (16)")
    parser.add_argument("--events", default="python:*",
                        help="events the pyust session enables (python:*); for profiling")
    parser.add_argument("--contexts", default=",".join(CONTEXTS),
                        help=f"contexts the pyust session adds ({','.join(CONTEXTS)}; '' for "
                        "none); for profiling")
    parser.add_argument("--trace-dir", default=None,
                        help="where the traces go while a run lasts (a temporary directory)")
    parser.add_argument("--python", default=sys.executable, metavar="PATH",
                        help="the interpreter of the measured children (default: this one)")
    parser.add_argument("--pyust-path", default=None, metavar="DIR",
                        help="prepended to the children's PYTHONPATH (default: the build "
                        "scripts/setup made for the children's interpreter: build/python for "
                        "Debian's /usr/bin/python3, build-pyX.Y/python for any other; '' for "
                        "none)")
    parser.add_argument("--wait-quiet", type=float, default=300, metavar="SECONDS",
                        help="before each pyust run, wait up to this long for other sessions "
                        "recording python:* to end (300); runs they overlap are flagged")
    parser.add_argument("--verify", action="store_true",
                        help="also count each pyust trace's events with babeltrace2 (slow)")
    parser.add_argument("--child-prefix", default="",
                        help="command prefix for every child, e.g. 'perf stat -o FILE'")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "WORKLOAD", "SCALE"),
                        help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        return options
    options.rounds = options.rounds or (QUICK_ROUNDS if options.quick else ROUNDS)
    if options.scale is None:
        options.scale = QUICK_SCALE if options.quick else 1.0
    options.contexts = tuple(c for c in options.contexts.split(",") if c)
    if options.modes is None:
        options.modes = ",".join(MODES if options.suite else BASE_MODES)
    if options.workloads is None:
        options.workloads = ",".join(SUITE_WORKLOADS if options.suite else BASE_WORKLOADS)
    options.modes = [m for m in options.modes.split(",") if m]
    options.workloads = [w for w in options.workloads.split(",") if w]
    for mode in options.modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    for workload in options.workloads:
        if workload not in WORKLOADS:
            parser.error(f"unknown workload {workload!r}; choose from {', '.join(WORKLOADS)}")
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    return options


def interpreter_version(python: str) -> tuple:
    """(major, minor) of the interpreter python; raises BenchError."""
    try:
        done = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except OSError as error:
        raise BenchError(f"cannot run --python {python}: {error}") from None
    if done.returncode != 0:
        raise BenchError(f"--python {python} failed: {done.stderr.strip()}")
    major, minor = done.stdout.split()
    return int(major), int(minor)


def default_pyust_path(python: str, version: tuple) -> str:
    """The build of pyust for this interpreter, named as scripts/setup names it:
    build/python for Debian's /usr/bin/python3, build-pyX.Y/python for any other
    (pyenv's 3.11.7 too) ('' when there is none)."""
    is_debians = os.path.realpath(python) == os.path.realpath("/usr/bin/python3")
    build = "build" if is_debians else f"build-py{version[0]}.{version[1]}"
    path = os.path.join(REPO, build, "python")
    return path if os.path.isdir(path) else ""


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def main(argv: list) -> int:
    options = parse_args(argv)
    if options.child:
        mode, workload, scale = options.child
        child_main(mode, workload, float(scale))
        return 0
    signal.signal(signal.SIGTERM, _terminate)
    try:
        version = interpreter_version(options.python)
        if options.pyust_path is None:
            options.pyust_path = default_pyust_path(options.python, version)
            if not options.pyust_path and any(m.startswith("pyust") for m in options.modes):
                print(f"warning: no build of pyust for Python {version[0]}.{version[1]} in "
                      f"{REPO}; the children import pyust from their own path",
                      file=sys.stderr)
        if any(m.startswith("pyust") for m in options.modes):
            check_sessiond()
    except BenchError as error:
        print(f"overhead.py: {error}", file=sys.stderr)
        return 1
    labels = dict(LABELS)
    if version >= (3, 12):
        labels["empty-hook"] = LEGACY_HOOK_LABEL
    info = machine_info(options.python)
    info.update(build_info(options.pyust_path, options.python))
    print(f"machine: {info['cpu_model']}, {info['cores']} cores, Linux {info['kernel']}; "
          f"Python {info['python']} ({options.python}); {info['lttng']}")
    print("pyust from: " + (options.pyust_path or "the children's own sys.path, " +
                            str(info.get("pyust_installed_in"))) +
          f" (repository at {info['repo_head']}; native hook "
          f"{', '.join(info['pyust_native']) or 'not found there'})")
    if "empty-hook" in options.modes and version >= (3, 12):
        print("note: on Python 3.12+ the empty-hook mode measures the legacy PyEval_SetProfile "
              "API (emulated over sys.monitoring), which pyust does not use: no floor of "
              "pyust's cost there")
    runner = Runner(options)
    results: list = []
    skipped: dict = {}
    found_peers: dict = {}
    load = os.getloadavg()[0]
    started = time.time()
    try:
        if "empty-hook" in options.modes:
            why = runner.prepare_empty_hook()
            if why is not None:
                print(f"warning: skipping the empty-hook mode: {why}", file=sys.stderr)
                options.modes.remove("empty-hook")
                skipped["empty-hook"] = why
        wanted_peers = [m for m in options.modes if m in peers.PEERS]
        if wanted_peers:
            found_peers = peers.probe(options.python, runner.env, wanted_peers)
        for mode in wanted_peers:
            if "error" in found_peers.get(mode, {"error": "?"}):
                skipped[mode] = peers.skip_reason(mode, options.python, found_peers.get(mode, {}))
                print(f"skipping {mode}: {skipped[mode]}", flush=True)
                options.modes.remove(mode)
            else:
                print(f"peer {mode} {found_peers[mode]['version']} "
                      f"({found_peers[mode]['file']})", flush=True)
        for mode, workloads_ in MODE_WORKLOADS.items():
            left_out = [w for w in options.workloads if w not in workloads_]
            if mode in options.modes and left_out:
                print(f"note: {mode} runs on {', '.join(workloads_)} only, not "
                      f"{', '.join(left_out)} (see OVERHEAD.md)")
        print(f"{options.rounds} rounds, scale {options.scale}, modes {', '.join(options.modes)}; "
              f"session: {options.events}, contexts {','.join(options.contexts) or 'none'}, "
              f"channel {options.subbuf_size} x {options.num_subbuf} per CPU")
        if not options.modes:
            raise BenchError("no mode is left to run")
        if load > 0.5 * (os.cpu_count() or 1):
            print(f"warning: the machine is busy (load {load:.1f} on {os.cpu_count()} cores): "
                  "wall times are inflated and noisy; the cpu columns suffer less",
                  file=sys.stderr)
        for round_index in range(options.rounds):
            shift = round_index % len(options.modes)
            order = options.modes[shift:] + options.modes[:shift]
            for workload in options.workloads:
                for mode in order:
                    if workload not in MODE_WORKLOADS.get(mode, WORKLOADS):
                        continue
                    result = runner.measure(mode, workload)
                    result["round"] = round_index + 1
                    result["loadavg_1min_after"] = os.getloadavg()[0]
                    results.append(result)
                    extra = ""
                    if result.get("foreign_sessions"):
                        extra += "  [other sessions recorded python:* too]"
                    if mode in RECORDING_MODES:
                        extra += (f"  emitted {result['emitted']}, "
                                  f"discarded {result['discarded']}")
                    print(f"round {round_index + 1}/{options.rounds} {workload} "
                          f"{labels[mode]:24} {result['seconds']:7.3f} s{extra}", flush=True)
    except BenchError as error:
        print(f"overhead.py: {error}", file=sys.stderr)
        return 1
    finally:
        runner.close()
    checksums = {(r["workload"], r["checksum"]) for r in results}
    if len(checksums) != len({r["workload"] for r in results}):
        print("overhead.py: a traced run computed a different result than the others",
              file=sys.stderr)
        return 1
    summary = summarise(results, options.modes, options.workloads)
    print_table(summary, results, labels)
    line_events = w2_line_events(summary, options.scale)
    if line_events:
        print(f"\nW2 line events: {line_events['expected']:,} expected (4 per iteration), "
              + ", ".join(f"{labels[m]} emitted {round(n):,}"
                          for m, n in line_events["emitted"].items()))
    verdicts = targets.judge(summary, version)
    if any(t["value"] is not None for t in verdicts):
        targets.print_verdicts(verdicts, labels)
    if any(r.get("discarded") for r in results):
        print("\nwarning: LTTng discarded events: the pyust times are too low; rerun with a "
              "larger --subbuf-size or --num-subbuf", file=sys.stderr)
    if options.json:
        document = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": info,
            "config": {
                "rounds": options.rounds,
                "scale": options.scale,
                "modes": options.modes,
                "labels": {mode: labels[mode] for mode in options.modes},
                "workloads": options.workloads,
                "python": options.python,
                "pyust_path": options.pyust_path,
                "filter_modules": FILTER_MODULE,
                "subbuf_size": options.subbuf_size,
                "num_subbuf": options.num_subbuf,
                "events": options.events,
                "contexts": list(options.contexts),
                "wait_quiet_s": options.wait_quiet,
                "suite": options.suite,
                "mode_workloads": {mode: list(MODE_WORKLOADS.get(mode, WORKLOADS))
                                   for mode in options.modes},
                "skipped_modes": skipped,
                "peers": found_peers,
            },
            "elapsed_s": time.time() - started,
            "loadavg_1min_at_start": load,
            "summary": summary,
            "w2_line_events": line_events,
            "targets": verdicts,
            "runs": results,
        }
        with open(options.json, "w") as stream:
            json.dump(document, stream, indent=2)
            stream.write("\n")
        print(f"\nwrote {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
