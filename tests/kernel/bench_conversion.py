"""The cost of turning perf's recording into CTF, both ways, on one recording:
`perf data convert --to-ctf` against pyust's writer from `perf script`
(pyust.perf_ctf), in seconds per million kernel events, best of --repeat.

    PYTHONPATH=build/python python3 tests/kernel/bench_conversion.py [--calls N]

As root, with tracefs mounted. The recording: a process making N getppid()
system calls (2 N raw_syscalls events) with perf record -k mono, as pyust run
--kernel records them. A converter this perf lacks is reported as such.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from pyust import kernel, perf_ctf

PROGRAM = "import os\nfor _ in range({calls}): os.getppid()\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="pyust-bench-perf-")
    try:
        data = os.path.join(work, "syscalls.data")
        subprocess.run(["perf", "record", "--quiet", "-k", "mono", "-m", "1024", "-e",
                        kernel.PERF_SYSCALLS, "-o", data, "--", sys.executable, "-c",
                        PROGRAM.format(calls=args.calls)], check=True,
                       stdout=subprocess.DEVNULL)
        results = {}
        for name in ("perf data convert", "pyust (perf script)"):
            best = None
            events = None
            for _ in range(args.repeat):
                target = os.path.join(work, "ctf")
                shutil.rmtree(target, ignore_errors=True)
                start = time.perf_counter()
                if name == "perf data convert":
                    result = subprocess.run(["perf", "data", "convert", "--to-ctf", target, "-i",
                                             data, "--force"], capture_output=True, text=True)
                    if result.returncode != 0:
                        events = None
                        break
                    events = int(result.stderr.split("(")[-1].split()[0]) \
                        if "samples" in result.stderr else None
                else:
                    events = perf_ctf.convert(data, target)
                elapsed = time.perf_counter() - start
                best = elapsed if best is None else min(best, elapsed)
            results[name] = (best, events)
        for name, (best, events) in results.items():
            if best is None or not events:
                print(f"{name}: not available with this perf")
                continue
            print(f"{name}: {events} events in {best:.2f} s, "
                  f"{best / events * 1e6:.2f} s per million events")
        (base, _), (ours, _) = results.values()
        if base and ours:
            print(f"pyust / perf data convert: {ours / base:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
