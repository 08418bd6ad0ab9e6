"""W4, the asyncio-heavy benchmark workload (issue 29): many short tasks and awaits.

12,000 tasks at scale 1.0, gathered 100 at a time, each awaiting a small
coroutine four times that suspends once (asyncio.sleep(0)): five steps a task,
each resuming a chain of two or three coroutines. Then a producer puts 40,000
messages on a bounded queue that four consumer tasks (named) empty, each
message awaiting the small coroutine again. The event loop's steps, task
creation and the switches between tasks dominate: what task events cost shows
here. Deterministic, standard library only; about 1 s untraced on CPython 3.11.
"""

from __future__ import annotations

import asyncio


async def leaf(i: int) -> int:
    await asyncio.sleep(0)
    return i & 7


async def task(i: int) -> int:
    total = 0
    for k in range(4):
        total += await leaf(i + k)
    return total


async def produce(queue: asyncio.Queue, count: int, consumers: int) -> None:
    for i in range(count):
        await queue.put(i)
    for _ in range(consumers):
        await queue.put(None)


async def consume(queue: asyncio.Queue) -> int:
    total = 0
    while True:
        item = await queue.get()
        if item is None:
            return total
        total += await leaf(item)


async def main(tasks: int, messages: int) -> int:
    total = 0
    for start in range(0, tasks, 100):
        results = await asyncio.gather(*(task(i) for i in range(start, start + 100)))
        total += sum(results)
    queue: asyncio.Queue = asyncio.Queue(maxsize=16)
    consumers = [asyncio.create_task(consume(queue), name=f"consumer-{c}") for c in range(4)]
    await produce(queue, messages, len(consumers))
    return total + sum(await asyncio.gather(*consumers))


def run(scale: float = 1.0) -> int:
    """The workload at scale; returns its checksum."""
    return asyncio.run(main(max(1, int(120 * scale)) * 100, int(40_000 * scale)))
