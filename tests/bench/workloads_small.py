"""The small module of W3: the one module overhead.py's pyust-filtered mode traces.

W3 (workloads.w3_mixed) calls line_digest() on every 40th log line: 150
lines per repeat, 20 repeats at scale 1.0, so 3,000 calls of line_digest and
3,000 of _fold (6,000 calls, 12,000 call/return events) among W3's ~1M Python
calls. Under `pyust.start(modules="workloads_small")` these are the only calls
pyust records; every other call of W3 is filtered out.
"""

from __future__ import annotations

MODULE = __name__  # "workloads_small": the prefix the pyust-filtered mode traces
EVERY = 40         # W3 digests one log line in EVERY


def line_digest(line: str) -> int:
    """A cheap digest of one log line (two Python calls)."""
    return _fold(len(line), line.count(" "))


def _fold(length: int, spaces: int) -> int:
    return (length * 31 + spaces) & 0xFFFF
