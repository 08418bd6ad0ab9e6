"""asyncio as its users think of it (issue 29): which task ran what.

The programs here are the issue's; asyncio_reference.py (sys.setprofile with
asyncio.current_task() at every call) says, per task, what each one called:
what pyust's task events must agree with."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pyusttest.environment import FAST, PYTHON, python_version
from pyusttest.run import run_hooked, run_plain, run_pyust
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
    """In the fast mode a task, its steps and its end are records of its thread's batches, not
    events of their own: the trace as recorded has no python:task, python:task_step or
    python:task_end, and filter.pyust.expand gives them back in place, each step before its root
    frame's call, each end after its last return, as the standard mode has them."""
    program = make_program(THREE_TASKS)
    result = run_hooked([program], flags=[] if FAST else ["--fast"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == THREE_TASKS_OUTPUT
    session.stop()
    recorded = read_trace(session.path, session.owner, expand=False)
    assert recorded.of("python:batch") and not recorded.of("python:task_step")
    assert not recorded.of("python:task_end") and not recorded.of("python:task")
    expanded = read_trace(session.path, session.owner, expand=True)
    assert len(expanded.of("python:task")) >= 4  # main, a, b, c (and asyncio.run's own)
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
    has each task's root frame called and returned. The task view reads them raised and
    cancelled."""
    program = make_program(ENDINGS)
    result = run_hooked([program], flags=["--modules", "no_such_module"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "['ValueError', 'CancelledError']\n"
    trace = session.read()
    tasks = _step_events(trace, program)
    assert (tasks["fails"]["end"], tasks["waits"]["end"]) == (1, 2)
    assert [s["awaited"] for s in tasks["fails"]["steps"]] == [0, 1]
    assert [s["calls"] for s in tasks["fails"]["steps"]] == [["fails"], ["fails"]]
    main = next(t for t in tasks.values() if t["steps"][0]["calls"] == ["main"])
    assert main["end"] == 0
    calls = {trace.codes[e["fields"]["id"]]["qualname"] for e in trace.of("python:call")}
    assert calls >= {"main", "fails", "waits"} and "<module>" not in calls
    # The task view says how each ended, waits' 10 s sleep cut short by its cancellation.
    view = run_pyust(["report", str(session.path), "--format", "tasks"])
    assert view.returncode == 0, view.stderr
    rows = {row[-1]: row for row in (line.split() for line in view.stdout.splitlines())
            if row and row[-1] in ("fails", "waits")}
    assert rows["fails"][-2] == "raised" and rows["waits"][-2] == "cancelled", view.stdout


# ------------------------------------------------------------- reports by task

_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}
_FIGURE = re.compile(r"^  (wall|to start|running|awaiting) +([\d.]+) (ns|us|ms|s)  (.*)$")
_TREE_LINE = re.compile(r"^( +)([\d.]+) (?:ns|us|ms|s)  (\S+)  \((\d+) calls?, self ")


def _ns(number: str, unit: str) -> int:
    return round(float(number) * _UNITS[unit])


def _task_view(text: str) -> dict:
    """`pyust report --format tasks` read back: per task name, its figures in ns ("wall",
    "to start", "running", "awaiting"), "awaits" (what it awaited, as written), "table" (its
    row), "tree" ([depth, label, calls] in order) and "calls" (calls per label); "outside
    tasks" holds the thread's other frames (its "tree" and "calls")."""
    tasks: dict = {}
    current = None
    for line in text.splitlines():
        if line.startswith("task ") and ": " in line:
            current = tasks.setdefault(line[5:].split(": ")[0], {"tree": [], "calls": {}})
        elif line.startswith("outside tasks: "):
            current = tasks.setdefault("outside tasks", {"tree": [], "calls": {}})
        elif current is not None and (figure := _FIGURE.match(line)):
            current[figure[1]] = _ns(figure[2], figure[3])
            if figure[1] == "awaiting":
                current["awaits"] = figure[4]
        elif current is not None and (node := _TREE_LINE.match(line)):
            depth, label, calls = len(node[1]) // 2 - 1, node[3], int(node[4])
            current["tree"].append([depth, label, calls])
            current["calls"][label] = current["calls"].get(label, 0) + calls
        elif line.startswith("  ") and current is None and line.split()[-1] != "task":
            row = line.split()
            tasks.setdefault(row[-1], {"tree": [], "calls": {}})["table"] = row
    return tasks


def _traced_three_tasks(session, make_program, mode: str) -> tuple:
    """The three-task program traced in the mode; (program, trace directory)."""
    program = make_program(THREE_TASKS)
    result = run_hooked([program], flags=["--fast"] if mode == "fast" else [])
    assert result.returncode == 0, result.stderr
    assert result.stdout == THREE_TASKS_OUTPUT
    session.stop()
    return program, str(session.path)


@pytest.mark.parametrize("mode", ["standard", "fast"])
def test_task_view_names_each_task_with_its_times_and_calls(session, make_program, mode):
    """`pyust report --format tasks` names main's task, ctask and the gathered workers' tasks
    (Task-N), each with its wall time from creation to end, running and awaiting time (the
    three add up, with the time before its first step) and what it awaited: a worker its
    sleeps, one per item, main gather's future. Each task's call tree has, per function of
    the program, the calls the sys.setprofile reference counts for that task: a coroutine's
    resumptions are not calls. Worker b's tree nests fetch and parse under worker. Before
    this format, pyust report had no task view: every resumption was a call (worker 12,
    fetch 18) under the event loop's Handle._run."""
    program, trace = _traced_three_tasks(session, make_program, mode)
    result = run_pyust(["report", trace, "--format", "tasks", "--modules", "__main__",
                        "--min-share", "0"])
    assert result.returncode == 0, result.stderr
    view = _task_view(result.stdout)
    truth = {t["name"] or "outside tasks": t["calls"]
             for t in reference(program)["tasks"] if t["calls"]}
    shown = {name: {label: n for label, n in task["calls"].items() if label.startswith("__main__:")}
             for name, task in view.items()}
    assert {name: calls for name, calls in shown.items() if calls} == truth, result.stdout
    assert "ctask" in view and "Task-1" in view, result.stdout
    workers = {name: task for name, task in view.items() if "__main__:worker" in task["calls"]}
    assert len(workers) == 3
    for name, task in view.items():
        if name == "outside tasks":
            continue
        # Each figure is written to 4 significant digits or so ("25.319 ms").
        assert task["wall"] == pytest.approx(task["to start"] + task["running"] +
                                             task["awaiting"], rel=1e-3, abs=2_000), name
        assert task["table"][-2] == "returned", result.stdout
    b = next(task for task in workers.values() if task["calls"]["__main__:fetch"] == 4)
    assert b["tree"] == [[1, "__main__:worker", 1], [2, "__main__:fetch", 4],
                         [3, "__main__:parse", 4]]
    # Its sleeps (1, 2, 1, 2 ms) are awaits of futures: asyncio's sleep is hidden here.
    assert b["awaiting"] >= 5_900_000 and b["awaits"].startswith("future ")
    assert b["awaits"].endswith(" (4)")
    assert view["Task-1"]["awaits"].startswith("gather ") and view["Task-1"]["calls"] == {
        "__main__:main": 1}
    # With asyncio's frames shown, a sleep reads as one, and main's task created the others
    # in gather (ctask in create_task).
    result = run_pyust(["report", trace, "--format", "tasks"])
    assert result.returncode == 0, result.stderr
    assert re.search(r"^task ctask: created by Task-1 in __main__:main$", result.stdout,
                     re.M), result.stdout
    full = _task_view(result.stdout)
    assert [full[name]["awaits"].split(" ")[0] for name in workers] == ["sleep"] * 3


@pytest.mark.parametrize("mode", ["standard", "fast"])
def test_chrome_trace_gives_each_task_a_named_lane(session, make_program, mode, tmp_path):
    """The Chrome JSON has one lane per task (a thread of the process, named by the task),
    holding the task's frames and, between its steps, a slice per await; the thread's own
    lane keeps the event loop and no frame of a worker. Before, one lane held everything."""
    _, trace = _traced_three_tasks(session, make_program, mode)
    out = tmp_path / "t.json"
    result = run_pyust(["report", trace, "--format", "chrome", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    events = json.loads(out.read_text())["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e["name"] == "thread_name" and e["tid"] >= 2**30}
    names = list(lanes.values())
    assert len(names) == len(set(names)) and "ctask" in names and "Task-1" in names, lanes
    slices: dict = {}
    for e in events:
        if e["ph"] == "X":
            slices.setdefault(e["tid"], []).append(e["name"])
    workers = [tid for tid in lanes if "__main__:worker" in slices.get(tid, [])]
    assert sorted(slices[tid].count("await sleep") for tid in workers) == [2, 3, 4]
    assert slices[lanes_key(lanes, "Task-1")].count("await gather") == 1
    assert all(tid in slices for tid in lanes), "a lane without a slice"
    (pid,) = {e["pid"] for e in events if e["ph"] == "X"}
    thread = slices[pid]
    # (co_qualname is new in 3.11: 3.10's frames read by co_name.)
    assert {"asyncio.events:Handle._run", "asyncio.events:_run"} & set(thread)
    assert "__main__:worker" not in thread


def lanes_key(lanes: dict, name: str) -> int:
    return next(tid for tid, lane in lanes.items() if lane == name)


def test_tasks_option_roots_stacks_at_the_await_chain(session, make_program):
    """--tasks: the folded stacks (and svg and tree) put each worker under main, where main
    created it (in gather, or right under main for ctask's create_task), not under the loop's
    Handle._run; the time is the same, moved. Before, --tasks was refused and workers sat
    under Handle._run."""
    _, trace = _traced_three_tasks(session, make_program, "standard")

    def folded(*flags) -> dict:
        result = run_pyust(["report", trace, "--format", "folded", *flags])
        assert result.returncode == 0, result.stderr
        return {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1])
                for line in result.stdout.splitlines()}

    plain, chains = folded(), folded("--tasks")
    assert sum(plain.values()) == sum(chains.values())
    # ctask's worker right under main; the gathered ones under gather's frames (ensure_future
    # on 3.12 and later, _ensure_future before).
    workers = sorted(stack.split(";__main__:main;")[1] for stack in chains
                     if stack.endswith(";__main__:worker"))
    assert len(workers) == 2 and workers[0] == "__main__:worker", workers
    assert re.fullmatch(r"asyncio.tasks:gather;asyncio.tasks:_?ensure_future;__main__:worker",
                        workers[1]), workers
    assert all(re.search(r";asyncio.events:(Handle\.)?_run;__main__:worker$", stack)
               for stack in plain if stack.endswith(";__main__:worker"))
    tree = run_pyust(["report", trace, "--format", "tree", "--tasks", "--modules", "__main__",
                      "--min-share", "0"])
    assert re.search(r"^    \S+ \S+  __main__:main  \(1 call, .*\n      \S+ \S+  __main__:worker"
                     r"  \(3 calls, .*\n        \S+ \S+  __main__:fetch  \(9 calls, ",
                     tree.stdout, re.M), tree.stdout


# main() creates tasks without a name, with one (one not ASCII, one of 101 bytes), through the
# loop, and one of a Task subclass constructed directly (named at its first step), and prints
# the names asyncio gave them all.
NAMES = """\
import asyncio
import json


class Subclass(asyncio.Task):
    pass


async def leaf(i):
    await asyncio.sleep(0)
    return i


async def main():
    loop = asyncio.get_running_loop()
    tasks = [asyncio.current_task()]
    tasks += [asyncio.create_task(leaf(i)) for i in range(6)]
    tasks.append(asyncio.create_task(leaf(6), name="given"))
    tasks.append(asyncio.create_task(leaf(6), name="tâche-été"))
    tasks.append(asyncio.create_task(leaf(6), name="long-" + "n" * 96))
    tasks += [loop.create_task(leaf(7)), loop.create_task(leaf(8), name="123")]
    tasks.append(Subclass(leaf(9)))
    await asyncio.gather(*tasks[1:])
    print(json.dumps([task.get_name() for task in tasks]))


asyncio.run(main())
"""


@pytest.mark.parametrize("mode", ["standard", "fast"])
def test_each_task_has_the_name_asyncio_gives_it(session, make_program, mode):
    """python:task gives each task the name its get_name() says at the end of the run, in the
    order the tasks were created: asyncio's Task-n for the unnamed ones (which 3.12+ keep as a
    number until asked, and the hook reads in place), the name given otherwise (its last
    python:task's, for a task named again). In the fast mode, python:task is a record of the
    batches, but for a name over 100 bytes, an event of its own."""
    program = make_program(NAMES)
    result = run_hooked([program], flags=["--fast"] if mode == "fast" else [])
    assert result.returncode == 0, result.stderr
    expected = json.loads(result.stdout)
    assert len(expected) == 13 and "given" in expected and "123" in expected
    long_name = "long-" + "n" * 96
    if mode == "fast":
        session.stop()
        recorded = read_trace(session.path, session.owner, expand=False)
        assert {e["fields"]["name"] for e in recorded.of("python:task")} == {long_name}
    names: list = []  # in the order the tasks were named first, each task's last name
    alive: dict = {}  # a key's index in names, until its task ends (keys are reused)
    for e in session.read(expand=True).events:
        if e["name"] == "python:task":
            key = e["fields"]["task"]
            if key in alive:  # named again: 3.10 and 3.11 name a task after loop.create_task
                names[alive[key]] = e["fields"]["name"]
            else:
                alive[key] = len(names)
                names.append(e["fields"]["name"])
        elif e["name"] == "python:task_end":
            alive.pop(e["fields"]["task"], None)
    assert names[:len(expected)] == expected, names


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
