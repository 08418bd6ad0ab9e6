"""The other Python profilers overhead.py measures pyust against (its peers).

Each peer is a mode of overhead.py: a pair of calls put around the measured
workload in the child, like pyust's own modes. A peer runs only when the
children's interpreter can import it; otherwise the suite prints why and
goes on without it. Debian's packages (apt-get install python3-yappi
python3-line-profiler) serve /usr/bin/python3 only: a pyenv interpreter
(--python) has none of them unless they were pip-installed into it.

  yappi           yappi.start() / yappi.stop() on yappi's wall clock, as
                  cProfile, line_profiler and viztracer time (and pyust
                  stamps) events; its default CPU clock reads the thread's
                  CPU time per event, a system call each time (the vDSO does
                  not serve CPU-time clocks): W1 about 40x untraced here,
                  which measures the clock rather than the profiler;
                  otherwise its defaults (builtins not profiled, every thread)
  line-profiler   a LineProfiler with every function and method of the
                  workload modules registered (workloads.py and
                  workloads_small.py: functions, methods, properties),
                  enable_by_count() / disable_by_count(), as `kernprof -l`
                  does with @profile on every one of them
  viztracer       VizTracer(verbose=0).start() / stop(): in-process recording
                  into its ring buffer, without saving the result (the save
                  is a separate, larger cost)
  viztracer-async the same with log_async=True (`viztracer --log_async`):
                  each asyncio task's events on a lane of its own (W4)

The child calls hooks(); the parent calls probe() once, and skip_reason()
for each peer the probe could not import.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import subprocess

# Mode name -> the module the children import.
MODULES = {
    "yappi": "yappi",
    "line-profiler": "line_profiler",
    "viztracer": "viztracer",
    "viztracer-async": "viztracer",
}
PEERS = tuple(MODULES)
LABELS = {
    "yappi": "yappi",
    "line-profiler": "line_profiler (all fns)",
    "viztracer": "viztracer (no save)",
    "viztracer-async": "viztracer --log_async",
}
YAPPI_CLOCK = "wall"
DEBIAN_PACKAGES = {"yappi": "python3-yappi", "line-profiler": "python3-line-profiler"}

_PROBE = """
import importlib, importlib.metadata, json, sys
found = {}
for mode, module in json.loads(sys.argv[1]).items():
    try:
        imported = importlib.import_module(module)
    except Exception as error:
        found[mode] = {"error": f"{type(error).__name__}: {error}"}
        continue
    try:
        version = importlib.metadata.version(module.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        version = str(getattr(imported, "__version__", "?"))
    found[mode] = {"version": version, "file": getattr(imported, "__file__", None)}
print(json.dumps(found))
"""


def probe(python: str, env: dict, modes: list) -> dict:
    """For each peer mode: {"version": V} when `python` (with env) imports
    it, else {"error": why}. Raises nothing: a failed probe is an error for
    every mode."""
    wanted = {mode: MODULES[mode] for mode in modes}
    try:
        done = subprocess.run([python, "-c", _PROBE, json.dumps(wanted)], capture_output=True,
                              text=True, env=env, timeout=120)
        return json.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as error:
        return {mode: {"error": f"the import probe failed: {error}"} for mode in modes}


def skip_reason(mode: str, python: str, found: dict) -> str:
    """Why a peer the probe did not import is skipped, with the fix."""
    why = f"{MODULES[mode]} is not importable by {python} ({found.get('error', '?')})"
    package = DEBIAN_PACKAGES.get(mode)
    if package and python != "/usr/bin/python3":
        return why + f"; Debian's {package} serves /usr/bin/python3 only"
    if package:
        return why + f"; apt-get install {package}"
    return why + f"; pip install {MODULES[mode]} into that interpreter to measure it"


def functions_of(modules: list) -> list:
    """Every Python function defined at the top of the modules: functions,
    and the methods, static and class methods and property accessors of
    their classes (nested functions and lambdas cannot be registered)."""
    found = []
    for module in modules:
        for item in vars(module).values():
            if inspect.isfunction(item) and item.__module__ == module.__name__:
                found.append(item)
            elif inspect.isclass(item) and item.__module__ == module.__name__:
                for member in vars(item).values():
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if isinstance(member, property):
                        found += [f for f in (member.fget, member.fset, member.fdel) if f]
                    elif inspect.isfunction(member):
                        found.append(member)
    return found


def hooks(mode: str, modules: list):
    """(enable, disable, details) for a peer mode, set up in this child;
    modules are the workload's modules (line_profiler registers their
    functions). details go into the run's JSON."""
    if mode == "yappi":
        import yappi

        yappi.set_clock_type(YAPPI_CLOCK)
        return yappi.start, yappi.stop, {"clock": yappi.get_clock_type(), "version": _version(mode)}
    if mode == "line-profiler":
        import line_profiler

        profiler = line_profiler.LineProfiler()
        functions = functions_of(modules)
        for function in functions:
            profiler.add_function(function)
        return (profiler.enable_by_count, profiler.disable_by_count,
                {"registered_functions": len(functions), "version": _version(mode)})
    if mode in ("viztracer", "viztracer-async"):
        import viztracer

        tracer = viztracer.VizTracer(verbose=0, log_async=mode == "viztracer-async")
        return tracer.start, tracer.stop, {"version": _version(mode)}
    raise ValueError(f"unknown peer {mode!r}")


def _version(mode: str) -> str:
    """The installed distribution's version (yappi has no __version__)."""
    try:
        return importlib.metadata.version(MODULES[mode].replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return "?"
