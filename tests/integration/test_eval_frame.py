"""From CPython 3.11 pyust traces through a frame-evaluation function (PEP 523) when the
interpreter calls it for every Python call (without lines or C calls): it must record exactly
what a profile function sees, in both modes, whichever back end the interpreter under test gets
(python:process says which). The cases are those where the two kinds of hook differ: a
generator's creation (evaluated, not profiled), frames already running at start() (never
evaluated by the function), frames still running on other threads at stop(), and the calls a
specialised instruction enters inline (a warmed __getitem__ on some 3.11 releases, a warmed
__init__ on 3.13: pyust then keeps the version's own back end)."""

from __future__ import annotations

import json
from collections import Counter

from pyusttest.environment import child_env
from pyusttest.run import run_hooked, run_plain
from pyusttest.traces import assert_balanced

# Every kind of frame entry: plain and recursive calls, calls by keyword and with defaults,
# methods, properties, a warmed __getitem__, __getattr__, __getattribute__ and __init__, generators driven by for/next/send/throw/close, yield from,
# a coroutine under asyncio, lambdas, comprehensions, class bodies, exceptions unwinding
# through several frames, and a thread started while tracing.
EVERY_ENTRY = """\
import asyncio, threading

class Hidden:
    def __getattribute__(self, name):
        return 1

class Box:
    def __init__(self, items):
        self.items = items
    def __getitem__(self, i):
        return self.items[i % len(self.items)]
    def __getattr__(self, name):
        return len(name)
    @property
    def size(self):
        return len(self.items)

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def scaled(x, factor=2, *, offset=0):
    return x * factor + offset

def counter(n):
    for i in range(n):
        got = yield i
        if got:
            yield got

def outer(n):
    yield from counter(n)

def fails(depth):
    if depth == 0:
        raise ValueError("deep")
    return fails(depth - 1)

async def pause(x):
    await asyncio.sleep(0)
    return x

async def gather():
    return sum(await asyncio.gather(*(pause(i) for i in range(5))))

def work():
    box = Box(list(range(7)))
    total = sum(box[i] for i in range(3000)) + box.size + box.missing
    total += sum(Box([i]).size + scaled(i) + scaled(i, offset=1) for i in range(3000))
    hidden = Hidden()
    total += sum(hidden.anything for _ in range(3000))
    total += fib(12) + sum(outer(40)) + sum(x * x for x in range(10))
    gen = counter(10)
    next(gen)
    gen.send(5)
    try:
        gen.throw(KeyError("k"))
    except KeyError:
        pass
    gen.close()
    for _ in range(3):
        try:
            fails(4)
        except ValueError:
            total += 1
    square = lambda x: x * x
    total += sum(map(square, range(20)))
    class Local:
        value = fib(5)
    total += Local.value + asyncio.run(gather())
    return total

thread = threading.Thread(target=work)
thread.start()
thread.join()
print(work())
"""

# The per-function 'call' counts sys.setprofile sees for the program's own code, run
# untraced.
REFERENCE = """\
import json, runpy, sys, threading
counts = {}
def profile(frame, event, arg):
    if event == "call":
        code = frame.f_code
        if code.co_filename == sys.argv[1]:
            key = f"{code.co_firstlineno}:{code.co_name}"
            counts[key] = counts.get(key, 0) + 1
threading.setprofile(profile)
sys.setprofile(profile)
runpy.run_path(sys.argv[1], run_name="__main__")
sys.setprofile(None)
print(json.dumps(counts))
"""


def _backend(trace) -> str:
    (process,) = {e["fields"]["backend"] for e in trace.of("python:process")}
    return process


def _is_closing_at_stop(trace) -> bool:
    """Whether stop() closes other threads' open frames: the profile functions (up to 3.11)
    do, at each thread's next event; from 3.12 nothing runs on that thread's behalf."""
    (version,) = {e["fields"]["version"] for e in trace.of("python:process")}
    return tuple(int(part) for part in version.split(".")[:2]) < (3, 12)


def _calls_by_function(trace, program: str) -> Counter:
    counts = Counter()
    codes = trace.codes  # a property that reads every event
    for e in trace.of("python:call"):
        code = codes[e["fields"]["id"]]
        if code["file"] == program:
            counts[f"{code['first_line']}:{code['qualname'].rsplit('.', 1)[-1]}"] += 1
    return counts


def test_every_call_a_profile_function_sees_is_recorded(session, make_program):
    program = make_program(EVERY_ENTRY)
    reference = make_program(REFERENCE, name="reference.py")
    untraced = run_plain([reference, program])
    assert untraced.returncode == 0, untraced.stderr
    expected = json.loads(untraced.stdout.splitlines()[-1])
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == untraced.stdout.splitlines()[0]
    trace = session.read()
    backend = _backend(trace)
    assert dict(_calls_by_function(trace, program)) == expected, backend
    assert sum(expected.values()) > 3000
    for events in trace.threads().values():
        assert_balanced(trace, events)
    # Unwinding frames return with unwind=1: fails() five frames deep, three times, per thread.
    codes = trace.codes
    unwinds = Counter(codes[e["fields"]["id"]]["qualname"] for e in trace.of("python:return")
                      if e["fields"]["unwind"] == 1)
    assert unwinds["fails"] == 2 * 3 * 5, backend
    # pyust's own start of a thread calls nothing of the program's or threading's.
    assert not [e for e in trace.of("python:call")
                if codes[e["fields"]["id"]]["qualname"] == "Thread.name"], backend


# pyust.start() inside a function that returns before stop(): its frame was announced
# at start() and returns outside the hook's sight on the eval-frame back end.
STARTED_INSIDE = """\
import os, pyust

FAST = os.environ.get("PYUST_TEST_FAST") == "1"  # the mode of the test pass

def leaf(i):
    return i

def begin():
    pyust.start(fast=FAST, dormant=False)
    leaf(1)

def later():
    return [leaf(i) for i in range(3)]

def main():
    begin()
    later()
    pyust.stop()

main()
"""


def test_frames_running_at_start_return_in_order(session, make_program):
    program = make_program(STARTED_INSIDE)
    result = run_plain([program], env=child_env())
    assert result.returncode == 0, result.stderr
    trace = session.read()
    # <module>, main and begin were running: announced as calls. begin's return comes
    # before later's call; main and <module> are closed by stop().
    flow = trace.program_flow(program)
    names = [(kind, name) for kind, name, *_ in flow]
    assert names[:7] == [("call", "<module>"), ("call", "main"), ("call", "begin"),
                         ("call", "leaf"), ("return", "leaf"), ("return", "begin"),
                         ("call", "later")], _backend(trace)
    assert names[-3:] == [("return", "later"), ("return", "main"), ("return", "<module>")]
    assert names.count(("call", "leaf")) == 4 and names.count(("return", "leaf")) == 4
    for events in trace.threads().values():
        assert_balanced(trace, events)


# stop() while another thread, started under the hook, is inside a traced call: that
# thread's frames are closed at its next event (up to 3.11; from 3.12, on sys.monitoring as on
# the frame-evaluation function, they stay open), and nothing it does afterwards is recorded.
STOPPED_WHILE_RUNNING = """\
import os, threading, pyust

FAST = os.environ.get("PYUST_TEST_FAST") == "1"

go_on = threading.Event()
inside = threading.Event()

def after():
    return 1

def waiting():
    inside.set()
    go_on.wait()
    after()

def run():
    waiting()
    after()

pyust.start(fast=FAST, dormant=False)
thread = threading.Thread(target=run)
thread.start()
inside.wait()
pyust.stop()
go_on.set()
thread.join()
"""


def test_a_thread_inside_a_call_at_stop_is_closed(session, make_program):
    program = make_program(STOPPED_WHILE_RUNNING)
    result = run_plain([program], env=child_env())
    assert result.returncode == 0, result.stderr
    trace = session.read()
    threads = trace.threads()
    main_pid = min(vpid for vpid, _ in threads)
    (other,) = [events for (vpid, vtid), events in threads.items() if vtid != main_pid]
    names = [(kind, name) for kind, name, *_ in trace.program_flow(program, other)]
    if not _is_closing_at_stop(trace):
        # Nothing runs on the thread's behalf to close it with: its frames stay open in the
        # trace, and nothing after stop() is recorded (doc/interpreters.md,
        # "monitoring").
        assert names == [("call", "run"), ("call", "waiting")]
        assert_balanced(trace, threads[(main_pid, main_pid)])
        return
    assert names == [("call", "run"), ("call", "waiting"), ("return", "waiting"),
                     ("return", "run")], _backend(trace)
    for events in threads.values():
        assert_balanced(trace, events)


# A recursion far deeper than the default limit, which 3.11 runs untraced without nesting C
# calls: under a frame-evaluation function every Python call nests one, and 30,000 of them
# overflowed the main thread's 8 MiB C stack (SIGSEGV); 3.12 and 3.13 would raise
# RecursionError at their C recursion limit (1,500 calls on 3.12.1). When a quarter of a
# thread's C stack (or half that limit) is used the back end hands every thread over to the
# version's own back end, and says so in a second python:process event.
DEEP_RECURSION = """\
import sys
sys.setrecursionlimit(100000)

def down(n):
    return 0 if n == 0 else 1 + down(n - 1)

print(down(30000))
"""


def test_a_deep_recursion_runs_as_untraced(session, make_program):
    program = make_program(DEEP_RECURSION)
    result = run_hooked([program])
    assert (result.returncode, result.stdout) == (0, "30000\n"), result.stderr
    trace = session.read()
    codes = trace.codes
    downs = [e for e in trace.of("python:call") if codes[e["fields"]["id"]]["qualname"] == "down"]
    assert len(downs) == 30001
    for events in trace.threads().values():
        assert_balanced(trace, events)
    backends = [e["fields"]["backend"] for e in trace.of("python:process")]
    assert backends in (["setprofile"], ["monitoring"], ["eval-frame", "setprofile"],
                        ["eval-frame", "monitoring"]), backends


# Frames a profile function never sees: calls refused by the recursion limit (the default
# evaluator refuses them before they run), and a Python audit hook (run with tracing held
# off). The program counts the entries that ran; the base depth differs between runs.
UNSEEN = """\
import sys

entered = 0

def depth():
    frame, n = sys._getframe(), 0
    while frame:
        frame, n = frame.f_back, n + 1
    return n

def f():
    global entered
    entered += 1
    f()

def tree():
    global entered
    entered += 1
    try:
        tree()
    except RecursionError:
        tree()

def hook(event, args):
    pass

limit = sys.getrecursionlimit()
sys.setrecursionlimit(depth() + 10)
for run in (f, tree):
    try:
        run()
    except RecursionError:
        pass
sys.setrecursionlimit(limit)
sys.addaudithook(hook)
for _ in range(5):
    compile("1", "<audited>", "exec")
print(entered)
"""


def test_frames_a_profile_function_never_sees_are_not_recorded(session, make_program):
    program = make_program(UNSEEN)
    result = run_hooked([program])
    assert result.returncode == 0, result.stderr
    entered = int(result.stdout)
    assert entered > 100  # tree retried each refused call
    trace = session.read()
    codes = trace.codes
    calls = Counter(codes[e["fields"]["id"]]["qualname"] for e in trace.of("python:call")
                    if codes[e["fields"]["id"]]["file"] == program)
    assert calls["f"] + calls["tree"] == entered, _backend(trace)
    assert calls["hook"] == 0, _backend(trace)
    for events in trace.threads().values():
        assert_balanced(trace, events)
