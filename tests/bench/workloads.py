"""The benchmark workloads: plain Python programs, one function each.

overhead.py runs each one under every tracing mode, in a fresh interpreter
per measurement. They are deterministic, use the standard library only, and
take about 1-2 s untraced on CPython 3.11 at scale 1.0; the scale multiplies
the amount of work (not its shape) so that --quick runs stay representative.

- w1_calls: call-heavy. Recursive fib plus tiny methods on small objects:
  millions of Python calls, each doing almost nothing, so the cost of a
  tracer's call/return callbacks dominates.
- w2_lines: line-heavy. One function whose loop runs four simple lines per
  iteration (the for line included): about 60M line events at scale 1.0 and
  a single call, so a tracer's line callbacks are all that it pays.
- w3_mixed: a mix of what real programs do: json dumps/loads, re matching,
  small classes with methods and properties, dict and list work. Much of the
  time is spent in C (json, re), so calls are rarer than in w1. A few
  thousand of its ~1M calls go to the small module workloads_small, the one
  module overhead.py's pyust-filtered mode traces.
- w4_asyncio: asyncio-heavy (issue 29), in workloads_asyncio.py (imported
  only when it runs: the other workloads' processes do not load asyncio).

Each returns a checksum so that the interpreter cannot skip the work and a
run can be checked against an untraced one.
"""

from __future__ import annotations

import json
import math
import re

import workloads_small


# --- W1: call-heavy ----------------------------------------------------------


def fib(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


class Counter:
    """A small object whose methods are called a great many times."""

    __slots__ = ("value", "step")

    def __init__(self, step: int) -> None:
        self.value = 0
        self.step = step

    def bump(self) -> None:
        self.value += self.step

    def get(self) -> int:
        return self.value

    def is_odd(self) -> bool:
        return self.value & 1 == 1


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y

    def moved(self, dx: int, dy: int) -> "Point":
        return Point(self.x + dx, self.y + dy)

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


def _methods(rounds: int) -> int:
    counters = [Counter(step) for step in range(1, 9)]
    point = Point(0, 0)
    total = 0
    for i in range(rounds):
        counter = counters[i & 7]
        counter.bump()
        if counter.is_odd():
            total += counter.get()
        point = point.moved(1, -1)
        total += point.norm1() & 3
    return total


def w1_calls(scale: float = 1.0) -> int:
    """About 12.2M Python calls at scale 1.0 (fib: 4.4M, methods: 7.9M)."""
    # fib(n) makes 2 fib(n+1) - 1 calls (fib(31): 4,356,617); one level less
    # is 1/phi of the work, and log_phi(x) = 1.44 log2(x).
    depth = 31 - round(1.44 * math.log2(1.0 / scale)) if scale < 1.0 else 31
    total = fib(max(15, depth))
    total += _methods(int(1_500_000 * scale))
    return total


# --- W2: line-heavy ------------------------------------------------------------

# Iterations at scale 1.0: a line tracer sees 4 line events per iteration (the
# for line, which each iteration jumps back to, and the three below it), so
# 15M iterations make about 60M line events; 3 more end the function.
W2_ITERATIONS = 15_000_000


def w2_lines(scale: float = 1.0) -> int:
    """About 60M line events at scale 1.0 in this one function (4 per iteration)."""
    a = b = 0
    for i in range(int(W2_ITERATIONS * scale)):
        a += i
        b ^= a
        a &= 0xFFFF
    return a + b


# --- W3: mixed -----------------------------------------------------------------

_LOG_LINE = re.compile(
    r"(?P<ip>\d+\.\d+\.\d+\.\d+) - - \[(?P<when>[^\]]+)\] "
    r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.[01]" (?P<status>\d{3}) (?P<size>\d+)'
)
_WORD = re.compile(r"[a-z]+")


class Request:
    """One parsed log line."""

    def __init__(self, ip: str, method: str, path: str, status: int, size: int) -> None:
        self.ip = ip
        self.method = method
        self.path = path
        self.status = status
        self.size = size

    @property
    def is_error(self) -> bool:
        return self.status >= 400

    def section(self) -> str:
        parts = self.path.split("/")
        return parts[1] if len(parts) > 1 else ""

    def to_dict(self) -> dict:
        return {"ip": self.ip, "method": self.method, "path": self.path,
                "status": self.status, "size": self.size}


class Stats:
    def __init__(self) -> None:
        self.by_section: dict = {}
        self.errors = 0
        self.bytes = 0

    def add(self, request: Request) -> None:
        key = request.section()
        self.by_section[key] = self.by_section.get(key, 0) + 1
        if request.is_error:
            self.errors += 1
        self.bytes += request.size

    def top(self, n: int) -> list:
        return sorted(self.by_section.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _log_lines(count: int) -> list:
    sections = ("api", "static", "users", "search", "admin", "blog")
    methods = ("GET", "POST", "PUT", "DELETE")
    lines = []
    for i in range(count):
        lines.append(
            f"10.{i % 7}.{i % 13}.{i % 251} - - [22/Nov/2024:01:{i % 60:02d}:{i % 59:02d} +0000] "
            f'"{methods[i % 4]} /{sections[i % 6]}/item{i % 97}?q={i} HTTP/1.1" '
            f"{(200, 201, 304, 404, 500)[i % 5]} {(i * 37) % 5000}"
        )
    return lines


def _parse(lines: list) -> list:
    requests = []
    for line in lines:
        match = _LOG_LINE.match(line)
        if match is not None:
            requests.append(Request(match["ip"], match["method"], match["path"],
                                    int(match["status"]), int(match["size"])))
    return requests


def _documents(count: int) -> list:
    return [
        {"id": i, "title": f"document number {i}", "tags": ["alpha", "beta", "gamma"][: i % 4],
         "score": i * 0.25, "nested": {"a": [i, i + 1, i + 2], "b": {"c": str(i)}}}
        for i in range(count)
    ]


def _json_round_trips(documents: list) -> int:
    total = 0
    for document in documents:
        text = json.dumps(document, sort_keys=True)
        back = json.loads(text)
        total += len(text) + len(back["tags"])
    blob = json.dumps(documents)
    total += len(json.loads(blob))
    return total


def _words(text: str) -> dict:
    counts: dict = {}
    for word in _WORD.findall(text):
        counts[word] = counts.get(word, 0) + 1
    return counts


def w3_mixed(scale: float = 1.0) -> int:
    """Log parsing (re + classes), json round trips, word counting."""
    total = 0
    repeats = max(1, round(20 * scale))
    for r in range(repeats):
        lines = _log_lines(6_000)
        stats = Stats()
        for request in _parse(lines):
            stats.add(request)
        total += stats.errors + stats.bytes + len(stats.top(3))
        total += _json_round_trips(_documents(3_000))
        total += len(json.dumps([request.to_dict() for request in _parse(lines[:2_000])]))
        counts = _words(" ".join(lines[:1_500]).lower())
        total += sum(counts.values()) + r
        # The small module: 150 of the 6,000 lines, 2 calls each.
        for line in lines[::workloads_small.EVERY]:
            total += workloads_small.line_digest(line)
    return total


# --- W4: asyncio ---------------------------------------------------------------


def w4_asyncio(scale: float = 1.0) -> int:
    """About 100,000 task steps at scale 1.0 (workloads_asyncio.py)."""
    import workloads_asyncio

    return workloads_asyncio.run(scale)


WORKLOADS = {
    "W1": w1_calls,
    "W2": w2_lines,
    "W3": w3_mixed,
    "W4": w4_asyncio,
}
