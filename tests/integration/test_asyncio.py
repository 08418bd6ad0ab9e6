"""asyncio as its users think of it (issue 29): which task ran what.

The programs here are the issue's; asyncio_reference.py (sys.setprofile with
asyncio.current_task() at every call) says, per task, what each one called:
what pyust's task events must agree with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyusttest.environment import FAST, PYTHON, python_version
from pyusttest.run import run_hooked, run_plain
from pyusttest.traces import read_trace

REFERENCE = str(Path(__file__).with_name("asyncio_reference.py"))

# main() gathers three workers, one of them a task it created and named; each
# worker awaits fetch() n times, which sleeps, then calls parse().
THREE_TASKS = """\
import asyncio


def parse(data):
    return data.upper()


async def fetch(name, i):
    await asyncio.sleep(0.001 * (1 + i % 2))
    return parse(f"{name}{i}")


async def worker(name, n):
    out = []
    for i in range(n):
        out.append(await fetch(name, i))
    return out


async def main():
    c = asyncio.create_task(worker("c", 2), name="ctask")
    return await asyncio.gather(worker("a", 3), worker("b", 4), c)


print(asyncio.run(main()))
"""
THREE_TASKS_OUTPUT = "[['A0', 'A1', 'A2'], ['B0', 'B1', 'B2', 'B3'], ['C0', 'C1']]\n"


def _worker_calls(n: int) -> dict:
    return {"__main__:worker": 1, "__main__:fetch": n, "__main__:parse": n}


def reference(program: str, *options: str, python: str | None = None) -> dict:
    """asyncio_reference.py's JSON for program (run on python, by default the
    interpreter under test), counting the program's own functions."""
    out = Path(program).with_suffix(".reference.json")
    result = run_plain([REFERENCE, "--json", str(out), "--modules", "__main__", *options,
                        program], python=python)
    assert result.returncode == 0, result.stderr
    assert result.stdout == THREE_TASKS_OUTPUT
    return json.loads(out.read_text())


def test_reference_counts_each_task_of_the_three_task_program(make_program):
    """The reference's truth for the issue's program: main's task calls main once;
    each worker's task calls worker once and fetch and parse once per item; a
    coroutine's resumptions are not calls."""
    program = make_program(THREE_TASKS)
    tasks = reference(program, "--graph-at", "parse")["tasks"]
    outside = tasks[0]
    assert outside["name"] is None and outside["calls"] == {"__main__:<module>": 1}
    by_calls = sorted((t["calls"] for t in tasks[1:] if t["calls"]), key=len)
    assert by_calls[0] == {"__main__:main": 1}
    assert sorted(by_calls[1:], key=lambda c: c["__main__:fetch"]) == [
        _worker_calls(2), _worker_calls(3), _worker_calls(4)]
    named = [t for t in tasks if t["name"] == "ctask"]
    assert len(named) == 1 and named[0]["calls"] == _worker_calls(2)


def test_reference_call_graphs_on_3_14(make_program):
    """On 3.14 and later, capture_call_graph() inside parse() names the worker's
    task, its stack (parse, fetch, worker) and main's task awaiting it."""
    if python_version(PYTHON) < (3, 14):
        pytest.skip("asyncio.capture_call_graph() is new in 3.14")
    program = make_program(THREE_TASKS)
    graphs = reference(program, "--graph-at", "parse")["graphs"]
    assert len(graphs) == 9
    for graph in graphs:
        assert graph["stack"] == ["parse", "fetch", "worker"]
        assert [by["stack"] for by in graph["awaited_by"]] == [["main"]]
    assert sum(graph["task"] == "ctask" for graph in graphs) == 2


def _steps(trace, program: str) -> tuple:
    """The tasks python:task named, in the order they came ({"name", "parent": the creator's
    index or None}), and per task index the calls of the program's functions made during the
    task's steps (python:task_step, then the frames until its root frame returns), resumptions
    included as the trace has them; index None for calls outside any step. A task's key (its
    coroutine's address) names the latest task python:task named with it."""
    codes = trace.codes
    own = {i for i, c in codes.items() if c["file"] == program}
    tasks: list = []
    current: dict = {}  # key -> index in tasks
    calls: dict = {}
    threads: dict = {}  # (vpid, vtid) -> [depth, running [[task, root depth]], pending task]
    for e in trace.events:
        thread = threads.setdefault((e["vpid"], e["vtid"]), [0, [], None])
        if e["name"] == "python:task":
            parent = e["fields"]["parent"]
            current[e["fields"]["task"]] = len(tasks)
            tasks.append({"name": e["fields"]["name"], "parent": current.get(parent)})
        elif e["name"] == "python:task_step":
            thread[2] = current.get(e["fields"]["task"], -1)
        elif e["name"] == "python:call":
            thread[0] += 1
            if thread[2] is not None:
                thread[1].append([thread[2], thread[0]])
                thread[2] = None
            task = thread[1][-1][0] if thread[1] else None
            if e["fields"]["id"] in own:
                name = codes[e["fields"]["id"]]["qualname"]
                counts = calls.setdefault(task, {})
                counts[name] = counts.get(name, 0) + 1
        elif e["name"] == "python:return":
            if thread[1] and thread[1][-1][1] == thread[0]:
                thread[1].pop()
            thread[0] -= 1
    return tasks, calls


@pytest.mark.parametrize("flags", [[], ["--modules", "__main__"]], ids=["all", "main-only"])
def test_each_task_frames_are_attributed_to_it(session, make_program, flags):
    """python:task names each task (with the task that created it) and python:task_step
    starts each of its steps: every frame of the program between a step and its root
    frame's return runs for that task, as the reference says. Also when asyncio's own code,
    which creates the tasks, is filtered out."""
    program = make_program(THREE_TASKS)
    result = run_hooked([program], flags=flags)
    assert result.returncode == 0, result.stderr
    assert result.stdout == THREE_TASKS_OUTPUT
    tasks, calls = _steps(session.read(), program)
    assert calls.pop(None) == {"<module>": 1}
    main = next(task for task, counts in calls.items() if "main" in counts)
    assert tasks[main]["parent"] is None
    assert set(calls.pop(main)) == {"main"}
    # Each worker's task: its worker, fetch and parse, and no other task's: parse is a plain
    # function, called once per item; worker and fetch resume once per await.
    assert sorted(counts["parse"] for counts in calls.values()) == [2, 3, 4]
    for task, counts in calls.items():
        assert set(counts) == {"worker", "fetch", "parse"}
        assert tasks[task]["parent"] == main
    assert [calls[t]["parse"] for t in calls if tasks[t]["name"] == "ctask"] == [2]


def test_fast_mode_records_steps_in_batches(session, make_program):
    """In the fast mode a task's steps and its end are records of its thread's batches, not
    events of their own: the trace as recorded has no python:task_step or python:task_end, and
    filter.pyust.expand gives them back in place, each step before its root frame's call, each
    end after its last return, as the standard mode has them."""
    program = make_program(THREE_TASKS)
    result = run_hooked([program], flags=[] if FAST else ["--fast"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == THREE_TASKS_OUTPUT
    session.stop()
    recorded = read_trace(session.path, session.owner, expand=False)
    assert recorded.of("python:batch") and not recorded.of("python:task_step")
    assert not recorded.of("python:task_end")
    assert len(recorded.of("python:task")) >= 4  # main, a, b, c (and asyncio.run's own)
    expanded = read_trace(session.path, session.owner, expand=True)
    names: dict = {}  # a key's name when its task ends (keys are reused)
    ends: dict = {}
    for e in expanded.events:
        if e["name"] == "python:task":
            names[e["fields"]["task"]] = e["fields"]["name"]
        elif e["name"] == "python:task_end":
            ends[names.get(e["fields"]["task"])] = e["fields"]["state"]
    assert ends["ctask"] == 0 and len(ends) >= 4
    tasks, calls = _steps(expanded, program)
    assert sorted(counts.get("parse", 0) for counts in calls.values()) == [0, 0, 2, 3, 4]
    assert [calls[t]["parse"] for t in calls if t is not None and tasks[t]["name"] == "ctask"] == [2]


def _step_events(trace, program: str) -> dict:
    """Per task name: its python:task_step fields in order, each with the qualnames of the
    first `resumed` calls that follow it on its thread; and "end": its python:task_end state."""
    codes = trace.codes
    names: dict = {}
    out: dict = {}
    pending: dict = {}  # thread -> [step, calls still to take]
    for e in trace.events:
        thread = (e["vpid"], e["vtid"])
        if e["name"] == "python:task":
            names[e["fields"]["task"]] = e["fields"]["name"]
        elif e["name"] == "python:task_step":
            f = e["fields"]
            step = {"resumed": f["resumed"], "awaited": f["awaited"],
                    "awaited_id": f["awaited_id"], "calls": []}
            out.setdefault(names.get(f["task"], "?"), {"steps": []})["steps"].append(step)
            pending[thread] = [step, max(f["resumed"], 1)]
        elif e["name"] == "python:call" and pending.get(thread):
            step, left = pending[thread]
            step["calls"].append(codes[e["fields"]["id"]]["qualname"])
            pending[thread] = [step, left - 1] if left > 1 else None
        elif e["name"] == "python:task_end":
            out.setdefault(names.get(e["fields"]["task"], "?"), {"steps": []})["end"] = \
                e["fields"]["state"]
    return out


@pytest.mark.parametrize("flags,chain", [([], ["worker", "fetch", "sleep"]),
                                         (["--modules", "__main__"], ["worker", "fetch"])],
                         ids=["all", "main-only"])
def test_steps_say_what_they_resume_and_what_the_task_awaited(session, make_program, flags,
                                                               chain):
    """A task's first step resumes nothing and awaited nothing; each later one resumes its
    traced await chain (worker, fetch and asyncio's sleep; sleep filtered out with --modules
    __main__), whose frames are the step's first calls, after a future (sleep's); main's task
    awaits gather's future. Each task ends returned (python:task_end state 0)."""
    program = make_program(THREE_TASKS)
    result = run_hooked([program], flags=flags)
    assert result.returncode == 0, result.stderr
    tasks = _step_events(session.read(), program)
    assert tasks["ctask"]["end"] == 0
    workers = [t for t in tasks.values() if t["steps"][0]["calls"] == ["worker"]]
    assert sorted(len(t["steps"]) for t in workers) == [3, 4, 5]  # n sleeps: n + 1 steps
    for task in workers:
        first, *later = task["steps"]
        assert (first["resumed"], first["awaited"], first["awaited_id"]) == (0, 0, 0)
        for step in later:
            assert step["resumed"] == len(chain)
            assert [name.rsplit(".", 1)[-1] for name in step["calls"]] == chain
            assert step["awaited"] == 2 and step["awaited_id"] != 0
        assert task["end"] == 0
    main = next(t for t in tasks.values() if t["steps"][0]["calls"] == ["main"])
    assert [s["awaited"] for s in main["steps"][1:]] == [4]
    assert main["end"] == 0


ENDINGS = """\
import asyncio


async def fails():
    await asyncio.sleep(0)
    raise ValueError("no")


async def waits():
    await asyncio.sleep(10)


async def main():
    failing = asyncio.create_task(fails(), name="fails")
    waiting = asyncio.create_task(waits(), name="waits")
    await asyncio.sleep(0.01)
    waiting.cancel()
    results = await asyncio.gather(failing, waiting, return_exceptions=True)
    print([type(r).__name__ for r in results])


asyncio.run(main(), debug=False)
"""


def test_task_end_says_returned_raised_or_cancelled(session, make_program):
    """python:task_end: 1 for a task whose coroutine raised, 2 for one cancelled, 0 for main's
    (which returned); the sleep(0) before the raise is a bare yield (awaited 1). The roots
    are recorded whatever --modules says: a filter that names no module of the program still
    has each task's root frame called and returned. (3.10's profile function does not see the
    exception: there the cancelled task shows as raised, 1, as pyust-events(7) says.)"""
    program = make_program(ENDINGS)
    result = run_hooked([program], flags=["--modules", "no_such_module"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "['ValueError', 'CancelledError']\n"
    trace = session.read()
    tasks = _step_events(trace, program)
    cancelled = 1 if python_version(PYTHON) < (3, 11) else 2
    assert (tasks["fails"]["end"], tasks["waits"]["end"]) == (1, cancelled)
    assert [s["awaited"] for s in tasks["fails"]["steps"]] == [0, 1]
    assert [s["calls"] for s in tasks["fails"]["steps"]] == [["fails"], ["fails"]]
    main = next(t for t in tasks.values() if t["steps"][0]["calls"] == ["main"])
    assert main["end"] == 0
    calls = {trace.codes[e["fields"]["id"]]["qualname"] for e in trace.of("python:call")}
    assert calls >= {"main", "fails", "waits"} and "<module>" not in calls


# parent() creates child() as a task and awaits the task itself, once with asyncio's C Task and
# once with the pure-Python one (a task factory making asyncio.tasks._PyTask).
AWAITS_A_TASK = """\
import asyncio


async def child():
    await asyncio.sleep(0)
    return 1


async def parent(kind):
    return await asyncio.create_task(child(), name=f"child-{kind}")


def python_tasks(loop, coro, **kwargs):
    return asyncio.tasks._PyTask(coro, loop=loop, **kwargs)


async def main():
    await asyncio.create_task(parent("c"), name="parent-c")
    asyncio.get_running_loop().set_task_factory(python_tasks)
    await asyncio.create_task(parent("py"), name="parent-py")
    print("done")


asyncio.run(main())
"""


def test_a_task_awaiting_a_task_says_which(session, make_program):
    """A task that awaits another task (the C Task, then the pure-Python one) suspends on it:
    its next step says awaited 3 and the awaited task's key, the one its python:task gave."""
    program = make_program(AWAITS_A_TASK)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    trace = session.read()
    keys = {e["fields"]["name"]: e["fields"]["task"] for e in trace.of("python:task")}
    tasks = _step_events(trace, program)
    for kind in ("c", "py"):
        steps = tasks[f"parent-{kind}"]["steps"]
        assert [(s["awaited"], s["awaited_id"]) for s in steps] == \
            [(0, 0), (3, keys[f"child-{kind}"])], kind
        assert tasks[f"child-{kind}"]["end"] == 0
