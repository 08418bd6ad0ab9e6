"""asyncio tasks as a trace's events tell them (issue 29), for the tests that check them against
what the program itself saw (asyncio.capture_call_graph() inside it) and against
tests/integration/asyncio_reference.py (sys.setprofile and asyncio.current_task() at each call).

python:task names a task (its key: its coroutine's address; its creator's key), python:task_step
starts one of its steps just before its root frame's call (the step's first `resumed` calls
resume the frames its last step suspended; `awaited` and `awaited_id` say on what), the root's
return ends the step, and python:task_end says how the task ended. An eager task's first step
(3.12+) comes before the python:task that names it: create_task names it when the step is over.
A step that an exception thrown into the task starts (`thrown` 1) resumes one frame, the
innermost of its chain, and those it unwinds into next (`thrown` 2) go on the same step.

Calls are "module:qualname" (qualname is co_name before 3.11), as the reference names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# python:task_step's awaited and python:task_end's state (pyust-events(7)).
AWAITED = {0: "first", 1: "yield", 2: "future", 3: "task", 4: "gather"}
ENDS = {0: "done", 1: "error", 2: "cancelled"}


@dataclass(eq=False)
class Step:
    resumed: int
    awaited: str  # AWAITED's words
    awaited_id: int
    awaited_task: "Task | None" = None  # awaited "task": the task of that key
    resumes: list = field(default_factory=list)  # the first `resumed` calls, outermost first
    begin: int = 0  # index of its python:task_step in the trace's events
    end: int | None = None  # index of its root frame's return


@dataclass(eq=False)
class Task:
    key: int
    name: str | None = None  # None: no python:task named it
    parent: "Task | None" = None
    steps: list = field(default_factory=list)
    end: str | None = None  # ENDS's words; None: no python:task_end
    calls: dict = field(default_factory=dict)  # label -> new calls made in its steps

    def suspension_at(self, index: int) -> "Step | None":
        """The step that follows the suspension the task was in at event index (it says what
        the task awaited and which frames it had suspended), or None when it was not suspended
        then (running, not started, ended)."""
        for before, after in zip(self.steps, self.steps[1:]):
            if before.end is not None and before.end < index < after.begin:
                return after
        return None

    def __repr__(self) -> str:
        return f"Task({self.name!r}, {self.end}, {self.calls})"


@dataclass(eq=False)
class Sample:
    """A call of the probe function: the task whose step made it and that task's frames from
    the probe's caller out to the task's root frame (innermost first)."""

    index: int
    task: Task | None
    stack: list


@dataclass
class Tasks:
    tasks: list  # in the order each was first seen (a python:task or a step of an unnamed key)
    outside: dict  # label -> calls made outside any step
    samples: list

    def named(self, name: str) -> Task:
        found = [t for t in self.tasks if t.name == name]
        assert len(found) == 1, f"{len(found)} tasks named {name!r}: {self.tasks}"
        return found[0]

    def at(self, key: int, index: int) -> Task:
        """The task of key at event index: the last whose first step began before it (a key
        names another task once its task ended)."""
        return [t for t in self.tasks if t.key == key and t.steps and t.steps[0].begin < index][-1]


def read_tasks(trace, probe: str | None = None) -> Tasks:
    """The tasks of trace (one process's events); probe: the label of a function whose calls
    are samples (Sample)."""
    codes = trace.codes

    def label(code_id: int) -> str:
        code = codes[code_id]
        return f"{code['module']}:{code['qualname']}"

    tasks: list = []
    by_key: dict = {}  # key -> its latest Task
    outside: dict = {}
    samples: list = []
    # Per thread: frames open (labels), the running steps [[task, step, root depth, to resume]],
    # a step announced whose root is not called yet.
    threads: dict = {}

    def task_of(key: int, *, naming: bool = False) -> Task:
        task = by_key.get(key)
        renamed = naming and task is not None and task.name is not None and task.end is not None
        stepping = not naming and task is not None and task.end is not None
        if task is None or renamed or stepping:
            task = Task(key)
            by_key[key] = task
            tasks.append(task)
        return task

    for index, e in enumerate(trace.events):
        name, f = e["name"], e["fields"]
        thread = threads.setdefault((e["vpid"], e["vtid"]), {"frames": [], "running": [],
                                                             "pending": None})
        if name == "python:task":
            task = task_of(f["task"], naming=True)
            task.name = f["name"]
            if task.parent is None and f["parent"] != 0:
                task.parent = by_key.get(f["parent"])
        elif name == "python:task_step":
            task = task_of(f["task"])
            thrown = f.get("thrown", 0)
            if thrown == 2 and task.steps:
                step = task.steps[-1]
            else:
                awaited = by_key.get(f["awaited_id"]) if f["awaited"] == 3 else None
                step = Step(f["resumed"], AWAITED[f["awaited"]], f["awaited_id"], awaited,
                            begin=index)
                task.steps.append(step)
            thread["pending"] = (task, step, min(f["resumed"], 1) if thrown else f["resumed"])
        elif name == "python:call":
            frames = thread["frames"]
            frames.append(label(f["id"]))
            if thread["pending"] is not None:
                task, step, to_resume = thread["pending"]
                thread["pending"] = None
                thread["running"].append([task, step, len(frames), to_resume])
            running = thread["running"][-1] if thread["running"] else None
            if running is not None and running[3] > 0:
                running[1].resumes.append(frames[-1])
                running[3] -= 1
                continue
            counts = running[0].calls if running is not None else outside
            counts[frames[-1]] = counts.get(frames[-1], 0) + 1
            if probe is not None and frames[-1] == probe:
                stack = frames[running[2] - 1:-1][::-1] if running is not None else []
                samples.append(Sample(index, running and running[0], stack))
        elif name == "python:return":
            frames, running = thread["frames"], thread["running"]
            if running and running[-1][2] == len(frames):
                running.pop()[1].end = index
            if frames:
                frames.pop()
        elif name == "python:task_end":
            task_of(f["task"]).end = ENDS[f["state"]]
    return Tasks(tasks, outside, samples)
