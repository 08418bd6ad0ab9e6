"""What each asyncio task of a program ran, seen by sys.setprofile: the reference
that pyust's task events are checked against (issue 29).

    PYTHON asyncio_reference.py [--json FILE] [--modules M,...] [--graph-at NAME]...
                                PROGRAM [ARGS...]

Runs PROGRAM (as `python PROGRAM ARGS` would, under __main__) on the
interpreter that runs this file, with a profile function that looks up
asyncio.current_task() at every call and counts, per task, the calls of every
Python function, named "module:qualname" as pyust names them (qualname is
co_name before 3.11). A coroutine or generator resumed after a yield or an
await is not called again: the profile function sees the resumption as a
"call" of the frame it suspended, and counts only a frame's first one. Calls
made outside any task (the program's top level, the event loop between task
steps) count under the task "-" (null in the JSON). --modules counts only the
functions of modules named by one of the comma-separated prefixes, as pyust's
own option selects them.

On 3.14 and later, --graph-at NAME also records asyncio.capture_call_graph()
at every call of a function whose qualified name is NAME, inside a task: the
task, its call stack (innermost first) and what awaits it, recursively.

Without --json, a table goes to stderr; with it, FILE gets
    {"version": [3, 13], "tasks": [{"name": ..., "id": ..., "calls": {...}}, ...],
     "graphs": [{"at": NAME, "task": ..., "stack": [...], "awaited_by": [...]}, ...],
     "generators": [...]}
Tasks come in the order their first call came; "id" is the order a task was
first seen in (0, 1, ...), the task "-" has id -1. "generators" lists the
functions counted that are generators or async generators (not coroutines):
their resumptions by next(), send() or an `async for` are not counted here,
while a trace, whose python:call events do not tell a generator's resumption
from a call, has each of them.

The program runs slower (a Python call per event) and keeps every task object
alive until it ends (so that no two tasks share an id()): a reference for
small programs, not a profiler.
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys

GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable and async gen
PLAIN_GENERATOR_FLAGS = 0x20 | 0x200  # generator, async generator
COROUTINE_FLAGS = 0x80 | 0x100  # coroutine, iterable coroutine (types.coroutine)


def _qualname(code) -> str:
    return getattr(code, "co_qualname", code.co_name)


def _label(frame) -> str:
    module = frame.f_globals.get("__name__")
    if not isinstance(module, str) or not module:
        module = "?"
    return f"{module}:{_qualname(frame.f_code)}"


class Recorder:
    """The profile function and what it has counted."""

    def __init__(self, graph_at: set, modules: tuple = ()) -> None:
        import asyncio
        import asyncio.tasks

        self._asyncio = asyncio
        # The C current_task does not see a pure-Python task (asyncio.tasks._PyTask) on 3.14
        # and later: it keeps its current task in a dict of its own, which this reads too.
        self._py_current = getattr(asyncio.tasks, "_py_current_task", None)
        self._graph_at = graph_at
        self._modules = modules
        self._can_graph = hasattr(asyncio, "capture_call_graph")
        self.tasks: dict = {}  # id(task) -> record; the task is kept alive in it
        self.outside = {"name": None, "id": -1, "calls": {}}
        self.graphs: list = []
        self.generators: set = set()  # labels of generators and async generators counted
        # Frames of generators and coroutines that suspended: their next "call" is a resumption.
        self._suspended: dict = {}

    def current_task(self):
        try:
            task = self._asyncio.current_task()
        except RuntimeError:  # no running event loop
            return None
        if task is None and self._py_current is not None:
            try:
                task = self._py_current()
            except RuntimeError:
                return None
        return task

    def record_of(self, task) -> dict:
        if task is None:
            return self.outside
        record = self.tasks.get(id(task))
        if record is None:
            # Named at the end: create_task names a task after an eager one's first step.
            record = {"name": None, "id": len(self.tasks), "calls": {}, "task": task}
            self.tasks[id(task)] = record
        return record

    def profile(self, frame, event, arg) -> None:
        if event == "return":
            if frame.f_code.co_flags & GENERATOR_FLAGS:
                self._suspended[id(frame)] = frame
            return
        if event != "call":
            return
        if self._suspended.pop(id(frame), None) is frame:
            return  # a resumption; a frame that returned for good is never called again
        task = self.current_task()
        calls = self.record_of(task)["calls"]
        label = _label(frame)
        if not self._modules or _is_selected(label.split(":", 1)[0], self._modules):
            calls[label] = calls.get(label, 0) + 1
            flags = frame.f_code.co_flags
            if flags & PLAIN_GENERATOR_FLAGS and not flags & COROUTINE_FLAGS:
                self.generators.add(label)
        if task is not None and self._can_graph and _qualname(frame.f_code) in self._graph_at:
            self.graphs.append(self.graph(frame, task))

    def graph(self, frame, task) -> dict:
        # depth=3: past this method and the profile function, to the frame being called.
        graph = self._asyncio.capture_call_graph(task, depth=3)
        entry = _graph_entry(graph)
        entry["at"] = _qualname(frame.f_code)
        return entry

    def result(self) -> dict:
        tasks = [{**{k: v for k, v in r.items() if k != "task"}, "name": _future_name(r["task"])}
                 for r in self.tasks.values()]
        return {"version": list(sys.version_info[:2]), "tasks": [self.outside, *tasks],
                "graphs": self.graphs, "generators": sorted(self.generators)}


def _is_selected(module: str, prefixes: tuple) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _future_name(future) -> str:
    return future.get_name() if hasattr(future, "get_name") else type(future).__name__


def _graph_entry(graph) -> dict:
    return {
        "task": _future_name(graph.future),
        "stack": [_qualname(entry.frame.f_code) for entry in graph.call_stack
                  if hasattr(entry, "frame")],
        "awaited_by": [_graph_entry(by) for by in graph.awaited_by],
    }


def _table(result: dict) -> str:
    lines = []
    for task in result["tasks"]:
        if not task["calls"]:
            continue
        lines.append(f"task {task['name'] or '-'}")
        for label, count in sorted(task["calls"].items()):
            lines.append(f"  {count:6}  {label}")
    for graph in result["graphs"]:
        lines.append(f"graph at {graph['at']}: {json.dumps(graph)}")
    return "\n".join(lines) + "\n"


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(
        description="Per-task call counts of an asyncio program, by sys.setprofile.")
    parser.add_argument("--json", metavar="FILE", help="write the counts as JSON to FILE")
    parser.add_argument("--modules", metavar="M,...", default="",
                        help="count only the functions of these modules (and their submodules)")
    parser.add_argument("--graph-at", metavar="NAME", action="append", default=[],
                        help="3.14+: asyncio.capture_call_graph() at each call of NAME")
    parser.add_argument("program")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    modules = tuple(m for m in options.modules.split(",") if m)
    recorder = Recorder(set(options.graph_at), modules)
    sys.argv = [options.program, *options.args]
    status = 0
    sys.setprofile(recorder.profile)
    try:
        runpy.run_path(options.program, run_name="__main__")
    except SystemExit as exit:
        status = exit.code if isinstance(exit.code, int) else (exit.code is not None)
    finally:
        sys.setprofile(None)
    result = recorder.result()
    if options.json:
        with open(options.json, "w") as out:
            json.dump(result, out, indent=1)
    else:
        sys.stderr.write(_table(result))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
