"""The damaged-trace corpus (issue 7): copies of one real trace, each damaged one way, and
the checks every reader of a trace must pass on each of them.

Cases:
  truncate-N       the last packet of the largest data stream file cut N bytes in (in its
                   header, its packet context, its events, one byte short)
  metadata-*       the metadata file truncated, emptied, or a packet whose content size or
                   packet size points past the end of the file
  flip-SEED        one bit flipped: random.Random(SEED) picks the file (the metadata one time
                   in three, else a data stream file, by size) and the bit

Checks, for `pyust report` (profile, folded, chrome) and for babeltrace2 itself with
sink.pyust.report (with and without salvage=yes):
  - an answer within LIMIT seconds; never a signal, a Python traceback or a sanitizer report;
  - pyust report: exit 0 with a well-formed report (every folded line parses, chrome is
    JSON), or exit 1 with one `pyust: error:` line;
  - nothing dropped silently: when babeltrace2 cannot read the trace to its end
    (sink.utils.dummy fails), a pyust report that succeeds says "damaged trace".

Run as a script for the full corpus, e.g. under AddressSanitizer and UBSan:

    PYTHONPATH=tests/utils /usr/bin/python3 -m pyusttest.damage_corpus --trace T \\
        --plugin-path build-asan/src/plugin --sanitize --flips 0:500

(T: a trace recorded by `pyust run`, with several packets per stream; without --trace one
is recorded.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyusttest.environment import PYTHON, PYUST_PATH, plugin_dir
from pyusttest.traces import folded

# Every reader must answer within this many seconds (issue 7).
LIMIT = 10.0

# A program whose trace has several packets per stream with --subbuf-size 16K.
PROGRAM = """\
import threading
def leaf(i): return i * 2
def mid(n):
    s = 0
    for i in range(n): s += leaf(i)
    return s
def work(n):
    for _ in range(20): mid(n)
threads = [threading.Thread(target=work, args=(200,)) for _ in range(2)]
for t in threads: t.start()
work(100)
for t in threads: t.join()
"""
RUN_FLAGS = ("--subbuf-size", "16K", "--num-subbuf", "4", "--no-discard")

_SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


@dataclass
class Case:
    name: str
    damage: object  # damage(trace_copy: Path) -> None
    what: str = ""
    # The verdict pyust report must reach, where the case decides it ("a|b": either).
    expected: str = ""


@dataclass
class Outcome:
    case: str
    what: str
    verdict: str = ""  # "read", "salvaged" or "refused" (by pyust report, format profile)
    seconds: float = 0.0  # the slowest run
    problems: list = field(default_factory=list)
    known: list = field(default_factory=list)  # babeltrace2's own failings, not pyust's


# ------------------------------------------------------------------ the trace

def record(directory: Path, attempts: int = 5, trace_format: str | None = None) -> Path:
    """Records PROGRAM with pyust run into directory/trace. A session records every process
    that emits python:* events: a trace that holds another program's fast-mode events
    (python:batch, which sink.pyust.report cannot read without filter.pyust.expand) is
    recorded again; other programs' plain events are harmless."""
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / "prog.py"
    program.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPATH=PYUST_PATH)
    for attempt in range(attempts):
        trace = directory / f"trace{attempt}"
        formats = ["--trace-format", trace_format] if trace_format else []
        result = subprocess.run([PYTHON, "-m", "pyust", "run", "-o", str(trace), *RUN_FLAGS,
                                 *formats, "--", str(program)], capture_output=True, text=True,
                                timeout=120, env=env, cwd=directory)
        if result.returncode != 0:
            raise RuntimeError(f"pyust run failed: {result.stderr}")
        text = subprocess.run(["babeltrace2", str(trace)], capture_output=True, text=True,
                              timeout=120, check=True).stdout
        if "python:batch" not in text:
            return trace
    raise RuntimeError(f"every one of {attempts} traces holds other programs' python:batch "
                       "events")


def metadata_file(trace: Path) -> Path:
    (metadata,) = sorted(trace.rglob("metadata"))
    return metadata


def stream_files(trace: Path) -> list:
    directory = metadata_file(trace).parent
    return sorted(p for p in directory.iterdir() if p.is_file() and p.name != "metadata")


def packet_offsets(stream: Path) -> list:
    """The offsets of the packets of an intact LTTng stream file (little-endian)."""
    data = stream.read_bytes()
    offsets, offset = [], 0
    while offset < len(data):
        offsets.append(offset)
        offset += struct.unpack_from("<Q", data, offset + 56)[0] // 8
    return offsets


# ------------------------------------------------------------------- the cases

def truncation_cases(trace: Path) -> list:
    stream = max(stream_files(trace), key=lambda p: p.stat().st_size)
    offsets = packet_offsets(stream)
    if len(offsets) < 2:
        raise RuntimeError(f"{stream} holds one packet: record with smaller sub-buffers")
    last = offsets[-1]
    size = stream.stat().st_size
    cases = []
    for cut, where in ((20, "in the packet header"), (70, "in the packet context"),
                       (200, "in the first events"), ((size - last) // 2, "mid-packet"),
                       (size - last - 1, "one byte short")):
        def damage(copy, cut=cut):
            with open(copy / stream.relative_to(trace), "r+b") as file:
                file.truncate(last + cut)
        cases.append(Case(f"truncate-{cut}", damage,
                          f"{stream.name}: last packet cut {cut} bytes in ({where})"))
    return cases


def metadata_packet_count(metadata: Path) -> int:
    """The packets of a packetized CTF 1.8 metadata file (its packet headers: magic, uuid,
    checksum, then content and packet sizes in bits, 32 bits each, little-endian)."""
    data = metadata.read_bytes()
    count, offset = 0, 0
    while offset + 32 <= len(data):
        count += 1
        packet_bits = struct.unpack_from("<I", data, offset + 28)[0]
        if packet_bits == 0:
            break
        offset += packet_bits // 8
    return count


def metadata_cases(trace: Path) -> list:
    relative = metadata_file(trace).relative_to(trace)
    size = metadata_file(trace).stat().st_size

    def truncate(length):
        def damage(copy):
            with open(copy / relative, "r+b") as file:
                file.truncate(length)
        return damage

    def past_end(field_offset):
        def damage(copy):
            path = copy / relative
            data = bytearray(path.read_bytes())
            struct.pack_into("<I", data, field_offset, (len(data) + 4096) * 8)
            path.write_bytes(bytes(data))
        return damage

    def replace(old, new):
        def damage(copy):
            path = copy / relative
            data = path.read_bytes()
            assert old in data, f"{old!r} is not in the metadata"
            path.write_bytes(data.replace(old, new, 1))
        return damage

    if metadata_file(trace).read_bytes().startswith(b"\x1e"):
        # CTF 2 (LTTng 2.15+): a JSON text sequence, not in packets.
        return [
            Case("metadata-empty", truncate(0), "metadata file empty", "refused"),
            Case("metadata-truncate-30", truncate(30), "metadata cut in its preamble", "refused"),
            Case("metadata-truncate-half", truncate(size // 2), "metadata cut in half",
                 "refused"),
            Case("metadata-truncate-1", truncate(size - 1),
                 "metadata one byte short (its last fragment's closing brace)", "refused"),
            Case("metadata-not-json", replace(b'"type": "trace-class"', b'"type": trace-class"'),
                 "a metadata fragment that is not JSON", "refused"),
            Case("metadata-no-preamble", replace(b'"type": "preamble"', b'"type": "preambel"'),
                 "metadata whose first fragment is not a preamble", "refused"),
            Case("metadata-clock-without-frequency", replace(b'"frequency"', b'"frequencx"'),
                 "metadata whose clock class's frequency is damaged", "refused"),
        ]
    return [
        Case("metadata-empty", truncate(0), "metadata file empty", "refused"),
        Case("metadata-truncate-30", truncate(30), "metadata cut in its first packet header",
             "refused"),
        # Refused, or salvaged where the cut leaves whole packets that declare enough (the
        # trace is read up to its first undeclared event, and the report says it is damaged):
        # which one depends on where the half falls (LTTng 2.16's CTF 1.8 of this recording,
        # with vpid and vtid as its only contexts, is salvaged).
        Case("metadata-truncate-half", truncate(size // 2), "metadata cut in half",
             "refused|salvaged"),
        # One byte off the end of packetized metadata cuts only the last packet's padding.
        Case("metadata-truncate-1", truncate(size - 1), "metadata one byte short", "read"),
        Case("metadata-content-past-end", past_end(24),
             "metadata packet whose content size points past the end of the file", "refused"),
        # With one metadata packet its size only covers the padding: babeltrace2 2.0.4 reads
        # the content it has, 2.1.2 refuses the packet (the consumer daemon wrote this
        # recording's metadata in one 8 KiB packet once, in two the other times). With more,
        # the packets after it are lost: refused.
        Case("metadata-packet-past-end", past_end(28),
             "metadata packet whose packet size points past the end of the file",
             "read|refused" if metadata_packet_count(metadata_file(trace)) == 1 else "refused"),
        Case("metadata-clock-without-frequency", replace(b"freq =", b"freu ="),
             "metadata whose clock's `freq` attribute is damaged (babeltrace2 2.0.4: SIGFPE)",
             "refused"),
    ]


def flip_case(trace: Path, seed: int) -> Case:
    rng = random.Random(seed)
    metadata = metadata_file(trace)
    streams = stream_files(trace)
    if rng.random() < 1 / 3:
        target = metadata
    else:
        target = rng.choices(streams, weights=[p.stat().st_size for p in streams])[0]
    bit = rng.randrange(target.stat().st_size * 8)
    relative = target.relative_to(trace)

    def damage(copy):
        path = copy / relative
        data = bytearray(path.read_bytes())
        data[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(data))

    return Case(f"flip-{seed}", damage, f"{target.name}: byte {bit // 8} bit {bit % 8}")


def all_cases(trace: Path, seeds) -> list:
    return truncation_cases(trace) + metadata_cases(trace) + [flip_case(trace, s) for s in seeds]


# ------------------------------------------------------------------ the checks

@dataclass
class Run:
    returncode: object  # int, or "timeout"
    stdout: str
    stderr: str
    seconds: float


def _run(command: list, env: dict) -> Run:
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, timeout=LIMIT, env=env,
                                stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Run("timeout", "", "", time.monotonic() - start)
    return Run(result.returncode, result.stdout.decode("utf-8", "replace"),
               result.stderr.decode("utf-8", "replace"), time.monotonic() - start)


def sanitizer_env(plugin_path: str) -> dict:
    """LD_PRELOAD of gcc's libasan (the plugin is built with -Db_sanitize=address,undefined);
    UBSan reports stop the process."""
    libasan, libstdcxx = (subprocess.run(["gcc", f"-print-file-name={name}"],
                                         capture_output=True, text=True,
                                         check=True).stdout.strip()
                          for name in ("libasan.so", "libstdc++.so"))
    # libstdc++ too: babeltrace2 is C, and ASan must find the real __cxa_throw at start-up
    # to intercept the exceptions of the plugin, loaded later.
    return {"LD_PRELOAD": f"{libasan} {libstdcxx}",
            # Leaks are not looked for: the Python interpreter of pyust report runs under
            # the same preload and keeps its objects at exit.
            "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def check(copy: Path, plugin_path: str, extra_env: dict) -> tuple:
    """Runs every reader on a damaged copy: (verdict, slowest seconds, problems, known).

    known: babeltrace2 2.0.4's src.ctf.fs spins for ever on some damaged metadata (a
    packet whose content size points past the end of the file, some truncations), or
    crashes (a clock without a frequency), before any component of pyust runs: such a
    babeltrace2 run, on metadata that pyust report refuses, is listed there, not as a
    problem (pyust report checks the metadata first for this reason)."""
    env = dict(os.environ, PYTHONPATH=PYUST_PATH, PYUST_PLUGIN_PATH=plugin_path, **extra_env)
    problems = []
    known = []
    slowest = 0.0
    bt = ["babeltrace2", "--plugin-path", plugin_path, str(copy)]
    runs = {
        "babeltrace2 sink.utils.dummy": bt + ["-c", "sink.utils.dummy"],
        "babeltrace2 sink.pyust.report": bt + ["-c", "sink.pyust.report", "-p",
                                               'format="folded"'],
        "babeltrace2 sink.pyust.report salvage=yes": bt + ["-c", "sink.pyust.report", "-p",
                                                           "salvage=yes"],
    }
    for report_format in ("profile", "folded", "chrome"):
        runs[f"pyust report -f {report_format}"] = [PYTHON, "-m", "pyust", "report", str(copy),
                                                    "-f", report_format]
    results = {}
    for name, command in sorted(runs.items(), key=lambda item: not item[0].startswith("pyust")):
        run = results[name] = _run(command, env)
        if run.returncode == "timeout":
            profile = results["pyust report -f profile"]
            if name.startswith("babeltrace2") and profile.returncode == 1 and \
                    "metadata" in profile.stderr:
                known.append(f"{name}: babeltrace2 spins on this metadata (pyust report "
                             "refuses it first)")
            else:
                problems.append(f"{name}: no answer within {LIMIT:g} s")
                slowest = max(slowest, run.seconds)
            continue
        slowest = max(slowest, run.seconds)
        if run.returncode < 0:
            problems.append(f"{name}: killed by signal {-run.returncode}")
        if "Traceback (most recent call last)" in run.stderr:
            problems.append(f"{name}: a Python traceback:\n{run.stderr[-2000:]}")
        for mark in _SANITIZER_MARKS:
            if mark in run.stderr:
                problems.append(f"{name}: a sanitizer report:\n{run.stderr[-4000:]}")
        if name.startswith("babeltrace2") and run.returncode not in (0, 1):
            problems.append(f"{name}: exit status {run.returncode}")
        if name.startswith("babeltrace2") and run.returncode == 1 and "ERROR:" not in run.stderr:
            problems.append(f"{name}: failed without an error report")
        if name.startswith("pyust"):
            problems += _check_report(name, run)
    # babeltrace2 2.0.4's src.ctf.fs also crashes on some damaged metadata (a clock without a
    # frequency: SIGFPE) before any pyust component is loaded: known, when pyust report
    # refuses that metadata first and the crash is not in pyust's plugin.
    profile = results["pyust report -f profile"]
    if profile.returncode == 1 and "metadata" in profile.stderr:
        for name, run in results.items():
            crashed = run.returncode != "timeout" and (
                run.returncode < 0 or run.returncode > 1 or
                any(mark in run.stderr for mark in _SANITIZER_MARKS))
            if name.startswith("babeltrace2") and crashed and \
                    "babeltrace-plugin-pyust" not in run.stderr:
                problems = [p for p in problems if not p.startswith(name + ":")]
                known.append(f"{name}: babeltrace2 crashes on this metadata (pyust report "
                             "refuses it first)")
    readable = results["babeltrace2 sink.utils.dummy"].returncode == 0
    for name, run in results.items():
        if name.startswith("pyust") and run.returncode == 0 and not readable and \
                "damaged trace" not in run.stderr:
            problems.append(f"{name}: babeltrace2 cannot read the trace to its end, yet the "
                            f"report says nothing of it:\n{run.stderr[-2000:]}")
    profile = results["pyust report -f profile"]
    if profile.returncode == 0:
        verdict = "salvaged" if "damaged trace" in profile.stderr else "read"
    else:
        verdict = "refused"
    return verdict, slowest, problems, known


def _check_report(name: str, run: Run) -> list:
    if run.returncode == "timeout" or run.returncode < 0:
        return []
    if run.returncode == 1:
        lines = run.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("pyust: error: "):
            return [f"{name}: exit 1 without one `pyust: error:` line:\n{run.stderr[-2000:]}"]
        return []
    if run.returncode != 0:
        return [f"{name}: exit status {run.returncode}"]
    try:
        if name.endswith("folded"):
            folded(run.stdout)
        elif name.endswith("chrome"):
            json.loads(run.stdout)
        elif not run.stdout.strip():
            return [f"{name}: an empty report"]
    except (ValueError, AssertionError) as error:
        return [f"{name}: a malformed report: {error}"]
    return []


def run_case(trace: Path, case: Case, workdir: Path, plugin_path: str,
             extra_env: dict) -> Outcome:
    copy = workdir / case.name
    shutil.copytree(trace, copy)
    try:
        case.damage(copy)
        verdict, seconds, problems, known = check(copy, plugin_path, extra_env)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return Outcome(case.name, case.what, verdict, seconds, problems, known)


def default_plugin_path() -> str:
    """The plugin under test (pyusttest.environment.plugin_dir)."""
    return plugin_dir()


# --------------------------------------------------------------------- script

def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, help="an intact trace recorded by pyust run")
    parser.add_argument("--plugin-path", default=default_plugin_path())
    parser.add_argument("--sanitize", action="store_true",
                        help="preload libasan (a plugin built with address,undefined)")
    parser.add_argument("--flips", default="0:500", help="seeds FIRST:END (default 0:500)")
    args = parser.parse_args(argv)
    first, end = (int(n) for n in args.flips.split(":"))
    extra_env = sanitizer_env(args.plugin_path) if args.sanitize else {}
    with tempfile.TemporaryDirectory(prefix="pyust-damage-") as work:
        workdir = Path(work)
        trace = args.trace or record(workdir / "recorded")
        cases = all_cases(trace, range(first, end))
        counts: dict = {}
        failures = hangs = 0
        slowest = 0.0
        start = time.monotonic()
        for case in cases:
            outcome = run_case(trace, case, workdir, args.plugin_path, extra_env)
            counts[outcome.verdict] = counts.get(outcome.verdict, 0) + 1
            slowest = max(slowest, outcome.seconds)
            status = "FAIL" if outcome.problems else "ok"
            print(f"{status:4} {outcome.case:28} {outcome.verdict:8} {outcome.seconds:5.2f} s  "
                  f"{outcome.what}", flush=True)
            for problem in outcome.problems + [f"known: {k}" for k in outcome.known]:
                print("     " + problem.replace("\n", "\n     "))
            failures += bool(outcome.problems)
            hangs += bool(outcome.known)
        print(f"{len(cases)} cases in {time.monotonic() - start:.0f} s: "
              + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
              + f"; slowest run {slowest:.2f} s; {failures} with problems; {hangs} where "
              "babeltrace2 alone spins or crashes on the metadata")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
