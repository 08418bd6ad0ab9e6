"""asyncio tasks in real programs (issue 29), at the level of the events: which task each
frame's call belongs to, the tasks' names, creators and ends, and what each step awaited, as
`pyust run` records them (pyusttest.asyncio_tasks reads them back), checked against what the
program itself saw (asyncio's own task states, the id() of the futures it awaited,
asyncio.capture_call_graph() on 3.14+) and against asyncio_reference.py, which counts each
task's calls with sys.setprofile and asyncio.current_task() in a second, untraced run.

Counts are compared where both runs make the same calls: the program's own functions, and
for the aiohttp server the server's request handling (aiohttp.web_*). asyncio's internals are
left out: which task runs call_soon() or a future's done callbacks depends on whether a
future was already done when awaited, and a garbage collection runs __del__ methods and weak
reference callbacks in whichever task allocates at that moment: timing, not attribution.
Generators are left out too (the reference lists them): each resumption of one is a
python:call, which the trace does not tell from a call, and the reference counts a generator's
frame once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pyusttest.asyncio_tasks import read_tasks
from pyusttest.environment import PYTHON, python_version
from pyusttest.run import run_hooked, run_plain, run_pyust
from pyusttest.traces import read_trace
from test_asyncio import THREE_TASKS, THREE_TASKS_OUTPUT

REFERENCE = str(Path(__file__).with_name("asyncio_reference.py"))


def trace_tasks(tmp_path: Path, program: str, *args: str, modules: str, probe=None):
    """`pyust run --modules MODULES -- PROGRAM ARGS`: (its standard output, its tasks)."""
    out = tmp_path / "trace"
    result = run_pyust(["run", "-o", str(out), "--modules", modules, "--", program, *args])
    assert result.returncode == 0, result.stderr
    return result.stdout, read_tasks(read_trace(out, tmp_path), probe=probe)


def reference(program: str, *args: str, modules: str) -> dict:
    """asyncio_reference.py's counts of the program's run on the interpreter under test."""
    out = Path(program).with_suffix(".reference.json")
    result = run_plain([REFERENCE, "--json", str(out), "--modules", modules, program, *args])
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text())


def _kept(calls: dict, keep) -> dict:
    return {label: n for label, n in calls.items() if keep(label)}


def _anonymous(name) -> str:
    # asyncio's default names number the tasks created without one in creation order, which
    # differs between two runs of a program whose tasks start on I/O.
    return re.sub(r"^Task-\d+$", "Task-*", str(name))


def counted_tasks(tasks: list, keep=lambda label: True) -> list:
    """(name, calls) of each task that made a kept call, as sorted JSON lines: what the
    reference and the trace are compared by. tasks: (name, calls) pairs."""
    return sorted(json.dumps([_anonymous(name), _kept(calls, keep)], sort_keys=True)
                  for name, calls in tasks if _kept(calls, keep))


def reference_tasks(result: dict) -> list:
    return [(t["name"], t["calls"]) for t in result["tasks"][1:]]


def same_counts(tasks, result: dict, modules: str) -> None:
    """The trace's tasks made the reference's calls of the functions of modules, task by task,
    and outside any task, generators left out. (The trace has the calls of a task's root
    frame whatever --modules says.)"""
    prefixes = tuple(modules.split(","))

    def keep(label):
        module = label.split(":", 1)[0]
        return (label not in result["generators"] and
                any(module == p or module.startswith(p + ".") for p in prefixes))

    assert counted_tasks(traced_tasks(tasks), keep) == counted_tasks(reference_tasks(result), keep)
    assert _kept(tasks.outside, keep) == _kept(result["tasks"][0]["calls"], keep)


def traced_tasks(tasks) -> list:
    return [(t.name, t.calls) for t in tasks.tasks]


# --------------------------------------------------------------------------- aiohttp

# An aiohttp server on loopback and, in the same program, a client that sends it N requests
# at once from N named tasks. Each handler waits until all N requests are in (so that they
# are in flight together: each has a connection and a task of its own), then answers with its
# own task's name and key (the address of its coroutine, which pyust's events carry).
AIOHTTP_SERVER = """\
import asyncio

from aiohttp import ClientSession, web

N = 5
arrived = 0
all_in = None


def render(name):
    return f"hello {name}"


async def hello(request):
    global arrived
    arrived += 1
    if arrived == N:
        all_in.set()
    await all_in.wait()
    await asyncio.sleep(0.001)
    task = asyncio.current_task()
    text = f"{render(request.match_info['name'])} {task.get_name()} {id(task.get_coro())}"
    return web.Response(text=text)


async def get(session, url):
    async with session.get(url) as response:
        return await response.text()


async def main():
    global all_in
    all_in = asyncio.Event()
    app = web.Application()
    app.router.add_get("/hello/{name}", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    async with ClientSession() as session:
        clients = []
        for i in range(N):
            url = f"http://{host}:{port}/hello/c{i}"
            clients.append(asyncio.create_task(get(session, url), name=f"client-{i}"))
        for line in await asyncio.gather(*clients):
            print(line)
    await runner.cleanup()


asyncio.run(main())
"""
# The program's own functions and aiohttp's server side, what a request's task runs.
WEB_MODULES = ("__main__,aiohttp.web_app,aiohttp.web_protocol,aiohttp.web_request,"
               "aiohttp.web_response,aiohttp.web_urldispatcher")


def test_aiohttp_requests_run_in_tasks_of_their_own(make_program, tmp_path):
    """Each of five concurrent requests to an aiohttp server runs in a task of its own: the
    task the handler saw itself run in (its name and key), created by its connection's task
    (whose root is aiohttp's RequestHandler.start), which awaits it; it holds the handler's
    calls and aiohttp's handling of the request, as many as the reference counts for a request's
    task, and ends returned. The five were in flight at once; the client's tasks hold one get()
    each, created by main()'s task. (aiohttp 3.10+ on Python 3.12+ starts a request's task
    eagerly, with asyncio.Task(eager_start=True) in its connection's task.)"""
    if run_plain(["-c", "import aiohttp"]).returncode != 0:
        pytest.skip(f"aiohttp is not installed for {PYTHON} (Debian: python3-aiohttp)")
    program = make_program(AIOHTTP_SERVER)
    stdout, tasks = trace_tasks(tmp_path, program, modules=WEB_MODULES)
    # A connection's task, whose root is RequestHandler.start (qualname: co_name before 3.11).
    start = "aiohttp.web_protocol:" + (
        "RequestHandler.start" if python_version(PYTHON) >= (3, 11) else "start")
    answers = [line.split() for line in stdout.splitlines()]
    assert [a[:2] for a in answers] == [["hello", f"c{i}"] for i in range(5)]
    main = next(t for t in tasks.tasks if "__main__:main" in t.calls)
    handlers = []
    for hello, _, name, key in answers:
        handler = next(t for t in tasks.tasks if t.key == int(key) and t.name == name)
        assert _kept(handler.calls, lambda label: label.startswith("__main__:")) == {
            "__main__:hello": 1, "__main__:render": 1}
        assert handler.end == "done"
        connection = handler.parent
        assert connection.calls[start] == 1
        assert [s.awaited_task for s in connection.steps if s.awaited == "task"] == [handler]
        handlers.append(handler)
    assert len(set(handlers)) == 5
    assert max(h.steps[0].begin for h in handlers) < min(h.steps[-1].end for h in handlers)
    for i in range(5):
        client = tasks.named(f"client-{i}")
        assert (client.parent, client.end) == (main, "done")
        assert _kept(client.calls, lambda label: label.startswith("__main__:")) == {
            "__main__:get": 1}
    same_counts(tasks, reference(program, modules=WEB_MODULES), WEB_MODULES)


# ------------------------------------------------------------- cancellation and timeouts

# Tasks that end every way asyncio has: a timeout (asyncio.timeout, 3.11+) and wait_for that
# expire, a task group (3.11+) whose child raises and whose other children are cancelled, a
# task cancelled with cancel(), one that turns its cancellation into another exception. Each
# task that parks on a future says which one (its id()); at the end, how each task ended, as
# asyncio says it (cancelled(), exception()).
ENDINGS = """\
import asyncio
import json

waited = {}
ends = {}


async def park():
    fut = asyncio.get_running_loop().create_future()
    waited[asyncio.current_task().get_name()] = id(fut)
    await fut


async def times_out():
    async with asyncio.timeout(0.01):
        await park()


async def waits_for():
    await asyncio.wait_for(park(), 0.01)


async def fails():
    await asyncio.sleep(0)
    raise ValueError("no")


async def group():
    async with asyncio.TaskGroup() as tg:
        children = [tg.create_task(fails(), name="g-fails"),
                    tg.create_task(park(), name="g-park1"),
                    tg.create_task(park(), name="g-park2")]
        try:
            await asyncio.sleep(10)
        finally:
            for child in children:
                record(child)


async def swallows():
    try:
        await park()
    except asyncio.CancelledError:
        raise RuntimeError("cleanup failed")


def record(task):
    ends[task.get_name()] = ("cancelled" if task.cancelled() else
                             "error" if task.exception() is not None else "done")


async def main():
    tasks = [asyncio.create_task(waits_for(), name="wait_for"),
             asyncio.create_task(park(), name="cancelled"),
             asyncio.create_task(swallows(), name="swallows")]
    if hasattr(asyncio, "timeout"):
        tasks += [asyncio.create_task(times_out(), name="timeout"),
                  asyncio.create_task(group(), name="group")]
    await asyncio.sleep(0.02)
    tasks[1].cancel()
    tasks[2].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        record(task)
    print(json.dumps({"ends": ends, "waited": waited}))


asyncio.run(main())
"""


def test_tasks_end_cancelled_failed_or_done_as_asyncio_says(make_program, tmp_path):
    """python:task_end says of each task what asyncio says of it at the end: cancelled (a
    task group's children, cancel(), wait_for's inner task before 3.12), failed (a timeout and
    wait_for that expired, a group whose child raised, the child itself, a task that turned its
    cancellation into RuntimeError) or done; every task is named as the program named it (a
    task group's children too, which 3.11 and 3.12 name after creating them) and created by
    the task that created it. Each task that parked on a future had that future (its id) as
    the await of its last step, the one its cancellation ended."""
    program = make_program(ENDINGS)
    stdout, tasks = trace_tasks(tmp_path, program, modules="__main__")
    seen = json.loads(stdout)
    expected = {"wait_for": "error", "cancelled": "cancelled", "swallows": "error"}
    if python_version(PYTHON) >= (3, 11):
        expected.update({"timeout": "error", "group": "error", "g-fails": "error",
                         "g-park1": "cancelled", "g-park2": "cancelled"})
    assert seen["ends"] == expected
    assert {name: tasks.named(name).end for name in expected} == expected
    main = next(t for t in tasks.tasks if "__main__:main" in t.calls)
    for name in ("wait_for", "cancelled", "swallows", "timeout", "group"):
        assert name not in expected or tasks.named(name).parent is main
    for name in ("g-fails", "g-park1", "g-park2"):
        assert name not in expected or tasks.named(name).parent is tasks.named("group")
    for name, future in seen["waited"].items():
        last = tasks.named(name).steps[-1]
        assert (last.awaited, last.awaited_id) == ("future", future), name


def test_frames_a_cancellation_resumes_run_for_their_task(make_program, tmp_path):
    """The frames that a cancellation or a timeout resumes run for their task: park()'s frames,
    which the cancellations unwind, count under their tasks as in the reference, none
    outside any task."""
    program = make_program(ENDINGS)
    _, tasks = trace_tasks(tmp_path, program, modules="__main__")
    same_counts(tasks, reference(program, modules="__main__"), "__main__")


# A task whose inner coroutine catches its first cancellation and parks again.
CAUGHT = """\
import asyncio
import json

waited = []


async def park():
    fut = asyncio.get_running_loop().create_future()
    waited.append(id(fut))
    await fut


async def inner():
    try:
        await park()
    except asyncio.CancelledError:
        await park()


async def outer():
    await inner()


async def main():
    task = asyncio.create_task(outer(), name="outer")
    for _ in range(2):
        await asyncio.sleep(0.01)
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    print(json.dumps(waited))


asyncio.run(main())
"""


def test_a_caught_cancellation_is_a_step_of_its_task(make_program, tmp_path):
    """A cancellation that the task's inner coroutine catches, then parks again, is a step of
    the task: three steps (the first, the caught cancellation, the last one), the second and
    the third ending the two parks (their futures' ids)."""
    program = make_program(CAUGHT)
    stdout, tasks = trace_tasks(tmp_path, program, modules="__main__")
    outer = tasks.named("outer")
    assert [(s.awaited, s.awaited_id) for s in outer.steps] == [
        ("first", 0), *(("future", future) for future in json.loads(stdout))]
    assert outer.end == "cancelled"
    assert tasks.outside == {"__main__:<module>": 1}


# An async generator that awaits in its body, consumed by a task's `async for`.
ASYNC_GENERATOR = """\
import asyncio


def parse(i):
    return i * 2


async def pause():
    await asyncio.sleep(0.001)


async def ticks(n):
    for i in range(n):
        await pause()
        yield i


async def consumer():
    return [parse(i) async for i in ticks(3)]


async def main():
    print(await asyncio.create_task(consumer(), name="consumer"))


asyncio.run(main())
"""


def test_an_async_generator_that_awaits_is_part_of_the_await_chain(make_program, tmp_path):
    """A task suspended in an await of an async generator's body resumes the generator's frame
    with the rest of its chain: each later step's first calls resume consumer() (and, before
    3.12, its async comprehension's frame), the generator and pause(), so that pause() has its
    three calls, as the reference counts. (The generator's frame, resumed by `async for` after
    each of its items, has a python:call for each, as any generator has.)"""
    program = make_program(ASYNC_GENERATOR)
    stdout, tasks = trace_tasks(tmp_path, program, modules="__main__")
    assert stdout == "[0, 2, 4]\n"
    consumer = tasks.named("consumer")
    assert [s.resumes[-2:] for s in consumer.steps[1:]] == [
        ["__main__:ticks", "__main__:pause"]] * 3
    assert consumer.calls["__main__:pause"] == 3
    same_counts(tasks, reference(program, modules="__main__"), "__main__")


# Tasks constructed directly, as aiohttp does on 3.12+: no create_task names them.
DIRECT_TASKS = """\
import asyncio
import sys


async def child(n):
    await asyncio.sleep(0)
    return n


async def main():
    loop = asyncio.get_running_loop()
    eager = {"eager_start": True} if sys.version_info >= (3, 12) else {}  # as aiohttp
    tasks = [asyncio.Task(child(1), loop=loop, name="direct"),
             asyncio.Task(child(2), loop=loop, name="direct-eager", **eager)]
    print([await task for task in tasks])


asyncio.run(main())
"""


def test_a_task_no_create_task_made_is_named_at_its_first_step(make_program, tmp_path):
    """A task constructed directly (asyncio.Task()) is named at its first step, which the
    event loop runs: its name, no creator; it holds its coroutine's calls."""
    program = make_program(DIRECT_TASKS)
    stdout, tasks = trace_tasks(tmp_path, program, modules="__main__")
    assert stdout == "[1, 2]\n"
    direct = tasks.named("direct")
    assert (direct.calls, direct.end, direct.parent) == ({"__main__:child": 1}, "done", None)


def test_an_eager_task_started_in_a_coroutine_runs_its_first_step_for_itself(make_program,
                                                                            tmp_path):
    """A task constructed with eager_start=True (3.12+) in main()'s step runs its first step
    at once, for itself: named at that step, created by main()'s task, which does not hold its
    calls."""
    if python_version(PYTHON) < (3, 12):
        pytest.skip("eager_start is new in 3.12")
    program = make_program(DIRECT_TASKS)
    stdout, tasks = trace_tasks(tmp_path, program, modules="__main__")
    assert stdout == "[1, 2]\n"
    main = next(t for t in tasks.tasks if "__main__:main" in t.calls)
    assert main.calls == {"__main__:main": 1}
    eager = tasks.named("direct-eager")
    assert (eager.calls, eager.end, eager.parent) == ({"__main__:child": 1}, "done", main)
    assert [s.resumed for s in eager.steps] == [0, 1]


# ------------------------------------------------------ the pure-Python Task, eager tasks

# Runs a program (argv[1]) on event loops whose tasks are the C Task (argv[2]: c), the
# pure-Python one (py: asyncio.tasks._PyTask through a task factory) or eager tasks (eager:
# asyncio.eager_task_factory, 3.12+, whose first step runs inside create_task), or on uvloop's
# event loop (uvloop: Cython, whose create_task and handles are no Python code).
WITH_TASKS = """\
import asyncio
import runpy
import sys

program, kind = sys.argv[1:]
new_event_loop = asyncio.events.new_event_loop


def py_task(loop, coro, **kwargs):
    return asyncio.tasks._PyTask(coro, loop=loop, **kwargs)


def new_loop():
    if kind == "uvloop":
        import uvloop
        return uvloop.new_event_loop()
    loop = new_event_loop()
    if kind != "c":
        loop.set_task_factory(py_task if kind == "py" else asyncio.eager_task_factory)
    return loop


asyncio.events.new_event_loop = new_loop  # asyncio.run()'s
sys.argv = [program]
runpy.run_path(program, run_name="__main__")
"""


def _worker(n: int) -> dict:
    return {"__main__:worker": 1, "__main__:fetch": n, "__main__:parse": n}


@pytest.mark.parametrize("kind", ["c", "py", "eager", "uvloop"])
def test_pure_python_and_eager_tasks_hold_the_calls_the_c_task_does(make_program, tmp_path,
                                                                      kind):
    """The issue's three-task program (test_asyncio.THREE_TASKS) with the pure-Python Task,
    with eager tasks and on uvloop's loop: each task holds what it holds with the C Task:
    main()'s task main() (and the factory's calls for the tasks it creates), each worker's
    task its worker, fetch and parse, once per item, with main()'s task as creator (on uvloop
    too, whose create_task is no Python code: gather's ensure_future names them); all end
    returned. Exactly the reference's counts, task by task (on 3.14 and later the
    reference finds a pure-Python task, which asyncio.current_task() does not return, in
    asyncio.tasks' own table of current tasks: see asyncio_reference.py)."""
    if kind == "eager" and python_version(PYTHON) < (3, 12):
        pytest.skip("asyncio.eager_task_factory is new in 3.12")
    if kind == "uvloop" and run_plain(["-c", "import uvloop"]).returncode != 0:
        pytest.skip(f"uvloop is not installed for {PYTHON} (Debian: python3-uvloop)")
    program = make_program(THREE_TASKS, "three_tasks.py")
    launcher = make_program(WITH_TASKS)
    stdout, tasks = trace_tasks(tmp_path, launcher, program, kind, modules="__main__")
    assert stdout == THREE_TASKS_OUTPUT
    main = next(t for t in tasks.tasks if "__main__:main" in t.calls)
    assert _kept(main.calls, lambda label: label != "__main__:py_task") == {"__main__:main": 1}
    workers = [t for t in tasks.tasks if "__main__:worker" in t.calls]
    assert sorted((w.calls for w in workers), key=lambda c: c["__main__:fetch"]) == [
        _worker(2), _worker(3), _worker(4)]
    assert all(w.parent is main and w.end == "done" for w in workers) and main.end == "done"
    assert [w.calls["__main__:parse"] for w in workers if w.name == "ctask"] == [2]
    same_counts(tasks, reference(launcher, program, kind, modules="__main__"), "__main__")


# An eager task that finishes in its first step, inside create_task, and one that sleeps.
EAGER_DONE = """\
import asyncio


async def child(n):
    if n:
        await asyncio.sleep(0.001)
    return n


async def main():
    asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
    done = asyncio.create_task(child(0), name="eager-done")
    sleeps = asyncio.create_task(child(1), name="eager-sleeps")
    print(await done, await sleeps, done.get_name())


asyncio.run(main())
"""


def test_an_eager_task_done_in_its_first_step_is_a_task_of_its_own(make_program, tmp_path):
    """An eager task (3.12+) that returns in its first step, before create_task returns it, is a
    task with that one step and child's call, created by main()'s; the program runs as it does
    untraced. Before, the hook asked the finished task for its coroutine, which 3.12's C Task
    has let go: 3.12.1 crashed (SIGSEGV), 3.13.0 named a task keyed by None. Its name is the one
    asyncio gave it by its first step (3.12 and 3.13 name it after their factory returns)."""
    if python_version(PYTHON) < (3, 12):
        pytest.skip("asyncio.eager_task_factory is new in 3.12")
    program = make_program(EAGER_DONE)
    stdout, tasks = trace_tasks(tmp_path, program, modules="__main__")
    assert stdout == "0 1 eager-done\n"
    main = next(t for t in tasks.tasks if "__main__:main" in t.calls)
    children = [t for t in tasks.tasks if "__main__:child" in t.calls]
    assert [(t.calls, t.parent is main, t.end, len(t.steps)) for t in children] == [
        ({"__main__:child": 1}, True, "done", 1), ({"__main__:child": 1}, True, "done", 2)]
    assert children[1].name == "eager-sleeps"
    assert re.fullmatch(r"eager-done|Task-\d+", children[0].name), children[0].name


# ----------------------------------------------------------- capture_call_graph(), 3.14+

# Tasks that walk() a few step()s: gathered by main(), created before the gather (ctask), in
# a task group, and awaited by a task that did not create it (dtask, by waits_on()'s).
# probe() records asyncio.capture_call_graph() from its caller out: the task (its key), its
# frames and, recursively, what awaits it.
GRAPHS = """\
import asyncio
import json

graphs = []


def label(frame):
    return f"{frame.f_globals.get('__name__')}:{frame.f_code.co_qualname}"


def entry(graph):
    return {"key": id(graph.future.get_coro()),
            "stack": [label(e.frame) for e in graph.call_stack],
            "awaited_by": [entry(by) for by in graph.awaited_by]}


def probe():
    graphs.append(entry(asyncio.capture_call_graph(depth=2)))


async def step(tag, i):
    await asyncio.sleep(0.001 * (1 + i % 2))
    probe()
    return f"{tag}{i}"


async def walk(tag, n):
    return [await step(tag, i) for i in range(n)]


async def waits_on(task):
    result = await task
    probe()
    return result


async def main():
    c = asyncio.create_task(walk("c", 2), name="ctask")
    d = asyncio.create_task(walk("d", 2), name="dtask")
    async with asyncio.TaskGroup() as tg:
        tg.create_task(walk("t", 1), name="tg-child")
    await asyncio.gather(walk("a", 3), walk("b", 4), c, waits_on(d))


asyncio.run(main())
print(json.dumps(graphs))
"""


def _check_graph(tasks, graph: dict, stack: list, index: int, own) -> None:
    """The events agree with one capture_call_graph() entry at event index: the same task,
    the same frames (those pyust records: own(label)), and every task that awaits it is one
    the events say awaits it: its step's await is this task, or it created this task and
    awaits a gather or a future (a task group's) meanwhile; a task whose await is this task
    is in the graph. The awaiting task's frames are those its next step resumes."""
    task = tasks.at(graph["key"], index)
    assert [f for f in graph["stack"] if own(f)] == [f for f in stack if own(f)]
    awaiting = {t for t in tasks.tasks
                if (step := t.suspension_at(index)) is not None and step.awaited_task is task}
    by = {b["key"]: b for b in graph["awaited_by"]}
    assert {t.key for t in awaiting} <= set(by)
    for key, awaited_by in by.items():
        awaiter = tasks.at(key, index)
        step = awaiter.suspension_at(index)
        assert awaiter in awaiting or (awaiter is task.parent and
                                       step.awaited in ("gather", "future"))
        _check_graph(tasks, awaited_by, step.resumes[::-1], index, own)


@pytest.mark.parametrize("kind", ["c", "eager"])
def test_await_chains_agree_with_capture_call_graph(make_program, tmp_path, kind):
    """At each probe() (in step(), and in waits_on() once its task's await returned),
    asyncio.capture_call_graph() and pyust's events name the same task, the same frames out
    to the task's root, and the same tasks awaiting it, with their frames. The pure-Python
    Task is left out: on 3.14 and later the C current_task(), which capture_call_graph() and
    gather() ask, does not return it (asyncio_reference.py finds it for the counts)."""
    if python_version(PYTHON) < (3, 14):
        pytest.skip("asyncio.capture_call_graph() is new in 3.14")
    program = make_program(GRAPHS, "graphs.py")
    stdout, tasks = trace_tasks(tmp_path, make_program(WITH_TASKS), program, kind,
                                modules="__main__", probe="__main__:probe")
    graphs = json.loads(stdout)
    assert len(graphs) == len(tasks.samples) == 13
    def own(label):
        return label.startswith("__main__:")

    for graph, sample in zip(graphs, tasks.samples):
        assert sample.task.key == graph["key"]
        _check_graph(tasks, graph, sample.stack, sample.index, own)
    # The task group's child, a's and b's (gathered), waits_on()'s: awaited whenever sampled.
    assert sum(bool(g["awaited_by"]) for g in graphs) >= 9


# ------------------------------------------------------------------ programs without asyncio


def test_a_program_without_asyncio_does_not_get_it_imported(session, make_program):
    """A coroutine driven by hand has steps (python:task_step, python:task_end) under a key no
    python:task names, and pyust does not import asyncio into the program to tell how it
    ended: the program's modules are its own."""
    program = make_program("""\
        import sys


        async def step():
            raise ValueError("done")


        coroutine = step()
        try:
            coroutine.send(None)
        except ValueError:
            pass
        print(sorted(name for name in sys.modules if name.startswith("asyncio")))
        """)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\n"
    tasks = read_tasks(session.read())
    step = next(t for t in tasks.tasks if "__main__:step" in t.calls)
    assert (step.name, step.end, len(step.steps)) == (None, "error", 1)
