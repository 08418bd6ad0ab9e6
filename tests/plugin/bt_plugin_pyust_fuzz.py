# A babeltrace2 source plugin (Python, bt2) that streams random or huge histories of pyust's
# event model (tracepoints/python_tp.h) into pyust's plugin: the message-level fuzzer and the
# memory benchmark of issue 7.
#
#   babeltrace2 --plugin-path tests/plugin:BUILD/src/plugin \
#       -c source.pyustfuzz.random -p 'scenario="mix"' -p seed=7 -p events=20000 \
#       -c sink.pyust.report -p 'format="folded"'
#
# Scenarios (parameter `scenario`):
#   mix      random steps: calls and returns of known and unknown ids, returns before any
#            call, duplicate code registrations (an id named again, differently), lines,
#            C calls, thread names, discarded-events messages on any stream at any time;
#            names from a pool with control characters, `;`, newlines, non-ASCII and 1 MB
#            (the 1 MB name `huge` times at most, default 4); with `tasks=1`, asyncio tasks
#            too, named, stepped (resuming any number of frames, after any await) and ended
#            anywhere, under a few keys (0, the default, keeps each seed's history as it was)
#   threads  `threads` threads (default 10,000), each a few nested calls
#   deep     one thread: `depth` nested calls (default 100,000), then their returns
#   bench    `events` call/return events: `threads` threads, each calling down to `depth`
#            and back, round robin (the stacks stay bounded while the trace grows)
#
# Messages are made as they are asked for (a generator), never all at once: `events` can be
# 1e8. The names cannot hold bytes that are not UTF-8: bt2 takes Python strings only.

import os
import random
import sys

import bt2

# The trace class of the golden tests' source: the same python:* event classes.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bt_plugin_pyust_test import build_trace_class  # noqa: E402

bt2.register_plugin(__name__, "pyustfuzz")

PID = 4242
MEGABYTE = 1 << 20


def name_pool(rng):
    """Names a hostile or broken trace could hold."""
    return [
        "f", "Klass.method", "<module>", "<lambda>", "a;b;c", "tab\there", "new\nline",
        "\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "bell\x07", "del\x7f", "", " ", "caf\u00e9",
        "\u65e5\u672c", "\U0001f600", "x" * 300, "y" * MEGABYTE, "quote\"back\\slash",
        "<unknown 0x1>", "%s%n%x", "".join(chr(rng.randrange(1, 0x3000)) for _ in range(50)),
    ]


def mix(rng, events, threads, huge, tasks=False):
    """(kind, values, tid, stream) steps of the mix scenario: at most `huge` of the names are
    the 1 MB one (each report repeats a name in every path it is on: a few suffice)."""
    pool = name_pool(rng)
    megabyte_names = [huge]

    def name():
        chosen = rng.choice(pool)
        if len(chosen) == MEGABYTE:
            if megabyte_names[0] == 0:
                return "z" * 1000
            megabyte_names[0] -= 1
        return chosen

    ids = [PID << 32 | n for n in range(1, 40)] + [0, 2**64 - 1, 7 << 32 | 5]
    tids = [PID] + [rng.randrange(1, 2**31) for _ in range(max(threads, 1) - 1)]
    keys = [0, 0xa0, 0xb0, 0xc0, 2**64 - 1]
    for _ in range(events):
        tid = rng.choice(tids)
        if tasks and rng.random() < 0.08:
            task = rng.random()
            if task < 0.3:
                yield "task", {"task": rng.choice(keys), "parent": rng.choice(keys),
                               "name": name()}, tid
            elif task < 0.85:
                yield "task_step", {"task": rng.choice(keys),
                                    "resumed": rng.choice([0, 1, 2, 3, 2**32 - 1]),
                                    "awaited": rng.randrange(256),
                                    "awaited_id": rng.choice(keys),
                                    "thrown": rng.choice([0, 0, 1, 2, 255])}, tid
            else:
                yield "task_end", {"task": rng.choice(keys), "state": rng.randrange(256)}, tid
            continue
        roll = rng.random()
        if roll < 0.10:
            yield "code", {"id": rng.choice(ids), "module": name(),
                           "qualname": name(), "file": name(),
                           "first_line": rng.randrange(2**32)}, PID
        elif roll < 0.45:
            yield "call", {"id": rng.choice(ids), "name": name()}, tid
        elif roll < 0.80:
            yield "return", {"id": rng.choice(ids), "unwind": rng.randrange(2)}, tid
        elif roll < 0.85:
            yield "line", {"id": rng.choice(ids), "line": rng.randrange(2**32)}, tid
        elif roll < 0.90:
            yield "c_call", {"name": name(), "owner": name()}, tid
        elif roll < 0.94:
            yield "c_return", {"exception": rng.randrange(2)}, tid
        elif roll < 0.97:
            yield "thread", {"tid": tid, "name": name()}, PID
        else:
            yield "lost", {"count": rng.choice([0, 1, 2**40])}, tid


def many_threads(threads):
    yield "code", {"id": PID << 32 | 1, "module": "m", "qualname": "outer", "file": "f.py",
                   "first_line": 1}, PID
    yield "code", {"id": PID << 32 | 2, "module": "m", "qualname": "inner", "file": "f.py",
                   "first_line": 2}, PID
    for n in range(threads):
        tid = 100000 + n
        yield "thread", {"tid": tid, "name": f"worker-{n}"}, PID
        yield "call", {"id": PID << 32 | 1, "name": "outer"}, tid
        yield "call", {"id": PID << 32 | 2, "name": "inner"}, tid
        yield "return", {"id": PID << 32 | 2, "unwind": 0}, tid
        if n % 2:  # half of them stay open to the end
            yield "return", {"id": PID << 32 | 1, "unwind": 0}, tid


def deep(depth):
    for level in range(8):
        yield "code", {"id": PID << 32 | (level + 1), "module": "m", "qualname": f"f{level}",
                       "file": "f.py", "first_line": level}, PID
    for n in range(depth):
        yield "call", {"id": PID << 32 | (n % 8 + 1), "name": f"f{n % 8}"}, PID
    for n in reversed(range(depth)):
        yield "return", {"id": PID << 32 | (n % 8 + 1), "unwind": 0}, PID


def bench(events, threads, depth):
    """Balanced calls and returns: each thread in turn goes down to depth and back up."""
    for level in range(depth):
        yield "code", {"id": PID << 32 | (level + 1), "module": "bench",
                       "qualname": f"level{level}", "file": "bench.py",
                       "first_line": level + 1}, PID
    emitted = 0
    while emitted < events:
        for thread in range(threads):
            tid = PID + thread
            for level in range(depth):
                yield "call", {"id": PID << 32 | (level + 1), "name": f"level{level}"}, tid
            for level in reversed(range(depth)):
                yield "return", {"id": PID << 32 | (level + 1), "unwind": 0}, tid
            emitted += 2 * depth
            if emitted >= events:
                return


class FuzzIterator(bt2._UserMessageIterator):
    def __init__(self, config, port):
        params, tc, sc, classes = port.user_data
        self._trace = tc(environment={"hostname": "fuzzhost", "domain": "ust"})
        self._streams = [self._trace.create_stream(sc, name=f"cpu{n}")
                         for n in range(params["streams"])]
        self._classes = classes
        self._messages = self._generate(params)

    def _generate(self, params):
        rng = random.Random(params["seed"])
        scenario = params["scenario"]
        if scenario == "mix":
            steps = mix(rng, params["events"], params["threads"], params["huge"],
                        params["tasks"])
        elif scenario == "threads":
            steps = many_threads(params["threads"])
        elif scenario == "deep":
            steps = deep(params["depth"])
        else:
            steps = bench(params["events"], params["threads"], params["depth"])
        streams = self._streams
        for stream in streams:
            yield self._create_stream_beginning_message(stream, 0)
        ns = 1
        for kind, values, tid in steps:
            ns += rng.randrange(1, 1000) if scenario == "mix" else 100
            stream = streams[tid % len(streams)] if scenario != "mix" else rng.choice(streams)
            if kind == "lost":
                # A discarded-events message covers [ns, ns + span]; the stream's next
                # message comes after its end.
                span = rng.randrange(0, 5000)
                yield self._create_discarded_events_message(
                    stream, values["count"] or None, ns, ns + span)
                ns += span
                continue
            message = self._create_event_message(self._classes[kind], stream, ns)
            context = message.event.common_context_field
            context["vpid"] = PID
            context["vtid"] = tid
            context["procname"] = "python3"
            payload = message.event.payload_field
            for key, value in values.items():
                payload[key] = value
            yield message
        for stream in streams:
            yield self._create_stream_end_message(stream, ns + 1)

    def __next__(self):
        return next(self._messages)


@bt2.plugin_component_class
class RandomSource(bt2._UserSourceComponent, name="random",
                   message_iterator_class=FuzzIterator):
    """Streams a random or huge pyust history (see the file's header)."""

    def __init__(self, config, params, obj):
        def number(name, default):
            return int(params[name]) if name in params else default

        scenario = str(params["scenario"]) if "scenario" in params else "mix"
        if scenario not in ("mix", "threads", "deep", "bench"):
            raise ValueError(f"unknown scenario {scenario!r}: mix, threads, deep or bench")
        settings = {
            "scenario": scenario,
            "seed": number("seed", 0),
            "events": number("events", 10000),
            "threads": number("threads", 10000 if scenario == "threads" else 8),
            "depth": number("depth", 100000 if scenario == "deep" else 10),
            "streams": number("streams", 4 if scenario == "mix" else 1),
            "huge": number("huge", 4),
            "tasks": number("tasks", 0) != 0,
        }
        tc, sc, classes = build_trace_class(self)
        self._add_output_port("out", (settings, tc, sc, classes))
