"""`python -m pyust report`: profiles, call trees and flame graphs of a trace.

    python -m pyust report TRACE... [--format profile|tree|lines|folded|chrome|svg] [-o FILE]
           [--pid N] [--tid N] [--modules PREFIXES] [--min-duration D] [--from T] [--to T]
           [--sort calls|self|total|mean] [--limit N] [--min-share P] [--max-size MB]
           [--merge-processes] [--raw-names]

The work is done by pyust's babeltrace2 plugin (src/plugin): this module checks the
arguments and the traces, then runs

    babeltrace2 [--plugin-path DIR] TRACE... -c sink.pyust.report -p format="..." ...

as a subprocess, never through a shell. It needs only the standard library, so that
it works with any interpreter pyust is installed for, bt2 or not.

Why check the traces first: babeltrace2 2.0.4 can spin for ever on a truncated
metadata file (the packet header survives, the text does not), so every `metadata`
file is checked before babeltrace2 sees it, and babeltrace2 runs under a timeout.

Where the plugin comes from: the directories of PYUST_PLUGIN_PATH (separated by
':'), else the build tree's src/plugin when this package is the build tree's
(build/python/pyust), else babeltrace2's system plugin directory, where
scripts/setup installs it.
"""

from __future__ import annotations

import argparse
import datetime as _datetime
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from decimal import Decimal, InvalidOperation
from pathlib import Path

from . import ctf, salvage
from .cli import UsageError, _Parser

FORMATS = ("profile", "tree", "lines", "folded", "chrome", "svg")
SORT_KEYS = ("self", "total", "calls", "mean")
DEFAULT_TIMEOUT = 60.0
# The defaults that keep a big program's report readable (issue 12: sympy's import gives
# 4,173 functions and a 22 MB tree); each output says what they left out.
DEFAULT_LIMIT = 40          # profile and lines rows
DEFAULT_MIN_SHARE = 0.5     # tree: percent of the thread's time
# Chrome JSON of 20 MB loads in speedscope in headless Chromium (125 s on a busy 2-core
# machine), 61 MB did not within 300 s; Perfetto's UI crashes on 900 MB (its WebAssembly
# memory). The README says when to raise it.
DEFAULT_MAX_SIZE_MB = 20
PLUGIN_FILE = "babeltrace-plugin-pyust.so"
PLUGIN_PATH_VARIABLE = "PYUST_PLUGIN_PATH"

_EPILOG = """\
formats:
  profile  per function: calls, self and inclusive time, mean (cProfile's table)
  tree     per thread, the call tree with inclusive and self times
  lines    per file:line, hits and time (traces recorded with --lines)
  folded   `frame;frame;frame self_ns` lines (flamegraph.pl, inferno, speedscope)
  chrome   Chrome Trace Event JSON (Perfetto UI, chrome://tracing, speedscope)
  svg      an interactive flame graph: click to zoom, hover, search

what the defaults leave out, each time with a last line saying so:
  profile, lines  the top 40 rows (--limit N; --limit 0: all), by self time (profile,
                  --sort calls|self|total|mean) or time (lines)
  tree            call paths under 0.5% of their thread's time (--min-share P; 0: all)
  chrome          frames past 20 MB of JSON (--max-size MB; 0: no limit), so that
                  speedscope and Perfetto's UI load it; --min-duration 10us keeps the
                  whole timeline in fewer frames instead
Several processes in one trace: profile writes a table per process (--merge-processes:
one, by function), folded starts each stack with its process, and every format names
processes by their command name and script, e.g. "pid 412 (python3 /srv/app.py)".

Native frames (run --native) read as their Python or C++ names: Cython's functions
as module.function (its wrapper, implementation and C function of one Python
function in one frame), C++ demangled, GCC's .cold/.part/.constprop pieces after
their function; --raw-names keeps the symbols.

durations (--min-duration): 250ns, 10us, 2ms, 1.5s; a bare number is ns.
times (--from, --to), on the trace's clock:
  1795315016693230182          ns from the clock's origin (LTTng: the Unix epoch)
  1795315016.693230182, 3.5ms  seconds from the origin as babeltrace2 writes them,
                               or a number with a unit (ns, us, ms, s)
  +2.5s, +300ms                from the start of the trace (its first packet)
  HH:MM[:SS[.NNNNNNNNN]]       local time on the day the trace starts
  YYYY-MM-DD HH:MM[:SS[.N]]    local date and time (set TZ=UTC for UTC)
Frames are clipped to the window; stacks are still rebuilt from the whole trace.

A trace records every process that emitted python:* events while it was
recording: use --pid to keep only yours (a --pid or --tid that matches nothing
fails and lists the processes and threads the trace holds).
What the trace could not tell exactly (started mid-call, lost events, frames
open at the end) is said per thread at the end of profile, tree and lines, in
chrome's otherData, and on standard error for folded and svg.

A damaged trace is read as far as it can be: a data stream file whose packet
is cut off or has an impossible header is read up to that packet, and when
babeltrace2 cannot decode an event, the report covers what came before it;
a warning says what was left out (--no-salvage: fail instead).

Exit status: 0, 1 when the trace or babeltrace2 fails, 2 for a bad option.
A reader that stops reading (`pyust report TRACE | head`) ends the report
quietly, as it ends `cat` (killed by SIGPIPE: status 141 in the shell).
"""


class ReportError(Exception):
    """The trace cannot be read or babeltrace2 failed; exit status 1."""


class ClosedPipe(Exception):
    """Whoever read the report stopped reading (`pyust report TRACE | head`): not an
    error, the report ends quietly as any Unix tool does."""


# ------------------------------------------------------------------ options

_DURATION_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9}
_NUMBER_WITH_UNIT = re.compile(r"(-?)(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s)?")
_CLOCK_TIME = re.compile(
    r"(?:(\d{4})-(\d{2})-(\d{2})[ T])?(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?")


def parse_duration(text: str) -> int:
    """"10us", "2ms", "1.5s", "250" (ns) -> ns. Raises ValueError."""
    ns = _number_with_unit(text.strip(), default_unit="ns")
    if ns is None or ns < 0:
        raise ValueError(f"bad duration {text!r}: expected e.g. 250ns, 10us, 2ms, 1.5s")
    return ns


def _number_with_unit(text: str, default_unit: str):
    """ns from "[-]NUMBER[UNIT]", or None when text is not of that form; a
    fraction finer than 1 ns is refused."""
    match = _NUMBER_WITH_UNIT.fullmatch(text)
    if not match:
        return None
    sign, number, unit = match.groups()
    try:
        value = Decimal(number) * _DURATION_UNITS[unit or default_unit]
    except InvalidOperation:
        return None
    if value != value.to_integral_value():
        return None
    return -int(value) if sign else int(value)


def parse_time(text: str, trace_start=None) -> int:
    """A time on the trace's clock -> ns from the clock's origin.

    A bare integer is ns; a number with a fraction (or a unit) is seconds (or
    that unit), as babeltrace2 prints them; +OFFSET is from trace_start() (ns,
    called only when needed); HH:MM[:SS[.N]] is local time on the day of
    trace_start(), and
    YYYY-MM-DD HH:MM[:SS[.N]] a local date and time. Raises ValueError.
    """
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text.startswith("+"):
        offset = _number_with_unit(text[1:].strip(), default_unit="s")
        if offset is None or offset < 0:
            raise ValueError(f"bad time {text!r}: expected +SECONDS or +NUMBER UNIT, e.g. +2.5s")
        return trace_start() + offset
    ns = _number_with_unit(text, default_unit="s")
    if ns is not None:
        return ns
    match = _CLOCK_TIME.fullmatch(text)
    if not match:
        raise ValueError(f"bad time {text!r}: expected ns (1795315016693230182), seconds "
                         "(1795315016.693230182), HH:MM[:SS[.N]] or YYYY-MM-DD HH:MM[:SS[.N]]")
    year, month, day, hour, minute, second, fraction = match.groups()
    if year is None:
        start = trace_start()
        date = _datetime.datetime.fromtimestamp(start // 10**9).date()
        year, month, day = date.year, date.month, date.day
    try:
        moment = _datetime.datetime(int(year), int(month), int(day), int(hour), int(minute),
                                    int(second or 0))
    except ValueError as error:
        raise ValueError(f"bad time {text!r}: {error}") from None
    nanoseconds = int((fraction or "0").ljust(9, "0"))
    return int(moment.timestamp()) * 10**9 + nanoseconds


def _duration_arg(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _id_arg(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or int(text) >= 2**63:
        raise argparse.ArgumentTypeError(f"bad id {text!r}: expected a process or thread id")
    return int(text)


def _count_arg(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or int(text) >= 2**53:
        raise argparse.ArgumentTypeError(f"bad number {text!r}: expected a whole number >= 0")
    return int(text)


def _megabytes_arg(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        value = -1.0
    if not 0 <= value < 2**40:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: expected megabytes >= 0, e.g. "
                                         "100 or 0.5")
    return value


def _share_arg(text: str) -> float:
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"bad share {text!r}: expected a percentage from 0 "
                                         "to 100, e.g. 0.5")
    return value


def _timeout_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"bad timeout {text!r}: expected seconds >= 0")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m pyust report",
        description=textwrap.fill(
            "Rebuild the Python call stacks of LTTng traces recorded with pyust and "
            "write a report: the hottest functions (default), call trees, per-line "
            "times, folded stacks, a Chrome trace or an SVG flame graph. Runs "
            "babeltrace2 with pyust's plugin (sink.pyust.report).", 79),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="trace directory (as `pyust run -o` or lttng wrote it; several "
                             "are read as one, on one timeline)")
    parser.add_argument("-f", "--format", choices=FORMATS, default="profile",
                        help="what to write (default: profile; see formats below)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write to FILE (replaced only when the report is complete) "
                             "instead of standard output")
    parser.add_argument("--pid", type=_id_arg, metavar="N", help="only process N (its vpid)")
    parser.add_argument("--tid", type=_id_arg, metavar="N", help="only thread N (its vtid)")
    parser.add_argument("--modules", action="append", metavar="PREFIXES",
                        help="show only frames of these modules: comma-separated module-name "
                             "prefixes (numpy matches numpy.core, not numpyro; C functions by "
                             "their owner, e.g. builtins); the time of hidden frames goes to "
                             "their nearest shown caller; repeatable")
    parser.add_argument("--min-duration", type=_duration_arg, metavar="D",
                        help="leave out call paths shorter than D (tree, folded, chrome, svg; "
                             "in folded their time goes to the caller), e.g. 10us, 2ms")
    parser.add_argument("--sort", choices=SORT_KEYS, default="self",
                        help="profile: order rows by self time (default), inclusive time, "
                             "calls or mean inclusive time per call; lines: by time "
                             "(self, total), hits (calls) or mean")
    parser.add_argument("--limit", type=_count_arg, default=None, metavar="N",
                        help=f"profile, lines: show the first N rows (default: "
                             f"{DEFAULT_LIMIT}; 0: all)")
    parser.add_argument("--min-share", type=_share_arg, default=None, metavar="P",
                        help=f"tree: leave out call paths under P%% of their thread's time "
                             f"(default: {DEFAULT_MIN_SHARE:g}; 0: none)")
    parser.add_argument("--max-size", type=_megabytes_arg, default=None, metavar="MB",
                        help=f"chrome: stop adding frames that start after the JSON reaches "
                             f"MB megabytes (default: {DEFAULT_MAX_SIZE_MB}; 0: no limit)")
    parser.add_argument("--merge-processes", action="store_true",
                        help="profile: one table for every process, functions merged by name "
                             "and place (default: a table per process); folded: stacks "
                             "without their process")
    parser.add_argument("--raw-names", action="store_true",
                        help="native frames (run --native) by their symbols as the binary "
                             "names them (__pyx_pw_3nat_1run, _ZN2ns3runEv, run.cold) "
                             "instead of readable names (nat.run, ns::run(), run)")
    parser.add_argument("--from", dest="begin", metavar="T",
                        help="only the part of the trace from time T (see times below)")
    parser.add_argument("--to", dest="end", metavar="T",
                        help="only the part of the trace up to time T")
    parser.add_argument("--timeout", type=_timeout_arg, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"stop babeltrace2 after S seconds (default: {DEFAULT_TIMEOUT:g}; "
                             "0: no limit)")
    parser.add_argument("--no-salvage", dest="salvage", action="store_false",
                        help="fail on a damaged trace instead of reporting what can be read")
    parser.add_argument("--show-command", action="store_true",
                        help="print the babeltrace2 command line on standard error first")
    return parser


# ------------------------------------------------------------------- traces

def find_metadata(trace: str) -> list:
    """The CTF metadata files in and below a trace directory (sorted). Raises
    ReportError when trace is not a directory holding at least one."""
    try:
        return ctf.find_metadata(trace)
    except ctf.CtfError as error:
        raise ReportError(str(error)) from None


def check_metadata(path: str) -> bytes:
    """Raises ReportError, naming what is wrong, unless path is a complete CTF 1.8 or
    CTF 2 metadata file (ctf.check_metadata). Returns its text (TSDL or JSON)."""
    try:
        return ctf.check_metadata(path).text
    except ctf.CtfError as error:
        raise ReportError(str(error)) from None


def trace_start(metadata_dirs: list, timeout: float) -> int:
    """The time (ns from the origin) of the first packet of the traces, from
    babeltrace2's babeltrace.trace-infos query. Raises ReportError."""
    inputs = "[" + ", ".join(param_string(d) for d in metadata_dirs) + "]"
    result = _run_quietly(["babeltrace2", "query", "src.ctf.fs", "babeltrace.trace-infos",
                           "-p", f"inputs={inputs}"], timeout)
    begins = [int(m) for m in re.findall(r"^\s*begin:\s*(-?\d+)\s*$", result, re.M)]
    if not begins:
        raise ReportError("cannot tell the day the trace starts: give --from/--to with a date "
                          "(YYYY-MM-DD HH:MM:SS) or in ns")
    return min(begins)


# ---------------------------------------------------------------- babeltrace2

def param_string(text: str) -> str:
    """text as a double-quoted string of babeltrace2's parameter syntax.
    Raises ReportError for text that is not valid Unicode (a path in another
    encoding)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ReportError(f"{text!r} is not valid UTF-8: babeltrace2 cannot take it as a "
                          "parameter (rename it)") from None
    out = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):03o}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def plugin_dirs() -> list:
    """The --plugin-path directories babeltrace2 needs to find pyust's plugin
    (empty: it is in babeltrace2's system directory). Raises ReportError when
    PYUST_PLUGIN_PATH names something that is not a directory."""
    value = os.environ.get(PLUGIN_PATH_VARIABLE)
    if value:
        dirs = [d for d in value.split(os.pathsep) if d]
        for directory in dirs:
            if not os.path.isdir(directory):
                raise ReportError(f"{PLUGIN_PATH_VARIABLE} names {directory}, which is not a "
                                  "directory")
        return [os.path.abspath(d) for d in dirs]
    build_plugin = Path(__file__).resolve().parents[2] / "src" / "plugin"
    if (build_plugin / PLUGIN_FILE).is_file():
        return [str(build_plugin)]
    return []


def _declares(metadata: list, name: bytes) -> bool:
    """Whether one of the metadata files names this (an event, a provider)."""
    for path in metadata:
        try:
            with open(path, "rb") as stream:
                if name in stream.read():
                    return True
        except OSError:
            continue
    return False


def has_native_events(metadata: list) -> bool:
    """Whether the traces declare lttng-ust's cyg-profile events (pyust run
    --native): their frames need babeltrace2's debug-info filter for names."""
    return _declares(metadata, b"lttng_ust_cyg_profile")


def has_batches(metadata: list) -> bool:
    """Whether the traces declare python:batch: then filter.pyust.expand goes in
    front of the sink. LTTng declares every event of the provider, so this holds
    for any trace of a pyust with the fast mode, fast or not; the filter lets a
    standard trace through without holding anything back."""
    return _declares(metadata, b'"python:batch"')


def babeltrace2_command(traces: list, params: dict, plugin_path: list,
                        debug_info: bool = False, expand: bool = False) -> list:
    """The argument vector of the babeltrace2 run (no shell): traces are
    absolute paths (never taken for options), params a dict of str or int.
    debug_info puts flt.lttng-utils.debug-info before the sink, which then
    names native frames by function (it resolves each event's ip context);
    expand puts filter.pyust.expand first, which turns fast-mode batches into
    python:call/return/line events."""
    command = ["babeltrace2"]
    for directory in plugin_path:
        command += ["--plugin-path", directory]
    command += [os.path.abspath(t) for t in traces]
    if expand:
        command += ["-c", "filter.pyust.expand"]
    if debug_info:
        command += ["-c", "flt.lttng-utils.debug-info"]
    command += ["-c", "sink.pyust.report"]
    for name, value in params.items():
        if isinstance(value, bool):
            text = "yes" if value else "no"
        else:
            text = str(value) if isinstance(value, int) else param_string(value)
        command += ["-p", f"{name}={text}"]
    return command


def _require_babeltrace2() -> None:
    if shutil.which("babeltrace2") is None:
        raise ReportError("babeltrace2 is not installed (Debian: apt-get install babeltrace2, "
                          "or run scripts/setup)")


def _run_quietly(command: list, timeout: float) -> str:
    """Runs a short babeltrace2 command; its standard output."""
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=timeout or None, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        raise ReportError(f"babeltrace2 did not answer within {timeout:g} s "
                          f"({shlex.join(command[:4])})") from None
    if result.returncode != 0:
        raise ReportError(explain_failure(result.stderr, result.returncode))
    return result.stdout


_CAUSE_HEADER = re.compile(r"^(?:ERROR:|CAUSED BY)\s*\[([^\]]*)\][^\n]*\n", re.M)
# A babeltrace2 log line: date, time, pid, tid, level, tag, function@file:line, message.
_LOG_ERROR = re.compile(r"^\d\d-\d\d [\d:.]+\s+\d+\s+\d+ E (PLUGIN/\S+) \S+ (.*)$", re.M)
_LOG_LINE = re.compile(r"^\d\d-\d\d [\d:.]+\s+\d+\s+\d+ [TDIWEF] ")
_ADDRESS = re.compile(r"\s*[\w-]+-addr=0x[0-9a-fA-F]+,?")
_QUOTED_PATH = re.compile(r"[`'](/[^`'\n]+)[`']")


_ASCII_SPACE = re.compile(r"[ \t\r\n]+")


def babeltrace2_causes(stderr: str) -> list:
    """The causes of babeltrace2's last error report, outermost first, as
    (origin, message) pairs: origin is what is in brackets ("Babeltrace CLI",
    "libbabeltrace2", "sink.pyust.report: 'sink.pyust.report'"), message one
    line without object addresses."""
    start = stderr.rfind("\nERROR:") + 1 if "\nERROR:" in stderr else 0
    report = stderr[start:]
    headers = list(_CAUSE_HEADER.finditer(report))
    causes = []
    for header, following in zip(headers, headers[1:] + [None]):
        body = report[header.end():following.start() if following else len(report)]
        # Lines are joined at ASCII white space only: str.split() would also take the
        # control characters a damaged trace's strings put in the message.
        text = " ".join(_ASCII_SPACE.split(body.strip(" \t\r\n")))
        causes.append((header.group(1), _ADDRESS.sub("", text).rstrip(", ")))
    return causes


def explain_failure(stderr: str, returncode: int) -> str:
    """One line that says why babeltrace2 failed, from its standard error."""
    return one_line(_explanation(stderr, returncode))


# Characters that would break a line or a terminal: C0 and C1 controls, and the separators
# str.splitlines() breaks at besides them. A damaged trace's strings reach babeltrace2's
# messages as they are.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """text with what would break its line or the terminal written as an escape (\\x1d)."""
    return _UNPRINTABLE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def _explanation(stderr: str, returncode: int) -> str:
    causes = babeltrace2_causes(stderr)
    if not causes:
        lines = [line.strip() for line in stderr.split("\n") if line.strip()]
        return f"babeltrace2 failed (exit status {returncode}): " + (
            lines[-1] if lines else "no message")
    origin, message = causes[-1]
    selection = re.search(r"No event matches (.*)", message)
    if "sink.pyust." in origin and selection:
        # The sink names its parameters; the user gave options.
        return re.sub(r"\b(pid|tid)=(\d+)", r"--\1 \2", "no event matches " + selection.group(1))
    if "sink.pyust." in origin:
        return re.sub(r"^Cannot initialize sink\.pyust\.report: ", "", message)
    if re.search(r'Cannot find component class: plugin-name="pyust"', message):
        return (f"babeltrace2 cannot find pyust's plugin ({PLUGIN_FILE}): run scripts/setup, "
                f"which installs it, or set {PLUGIN_PATH_VARIABLE} to the build's src/plugin")
    reading = "source.ctf" in origin or "query" in message
    # The muxer meets a stream whose times go backwards: events decoded from garbage.
    reading = reading or ("muxer" in origin and "timestamp is less than" in message)
    if not origin.endswith("'source.ctf.fs'"):
        # A generic cause ("query method failed"): the plugin's own error log says more.
        logged = _LOG_ERROR.search(stderr)
        if logged:
            message = _ADDRESS.sub("", logged.group(2)).rstrip(", ")
            reading = reading or logged.group(1).startswith("PLUGIN/CTF")
    paths = [p for _, text in causes for p in _QUOTED_PATH.findall(text)]
    if paths and paths[-1] not in message:
        message += f" (in {paths[-1]})"
    if reading:
        return f"damaged trace: babeltrace2 cannot read it: {message}"
    return f"babeltrace2 failed (exit status {returncode}): {message}"


def run_babeltrace2(command: list, timeout: float) -> str:
    """Runs the report; its standard output goes to ours. Returns babeltrace2's
    standard error (warnings, the sink's notes). Raises ReportError on failure
    or timeout (the process is killed then)."""
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, stderr = child.communicate(timeout=timeout or None)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise ReportError(f"babeltrace2 did not finish within {timeout:g} s and was stopped: "
                          "a damaged trace, or a large one (raise --timeout; 0 for no "
                          "limit)") from None
    except BaseException:  # KeyboardInterrupt: do not leave babeltrace2 running
        child.kill()
        child.wait()
        raise
    text = stderr.decode("utf-8", "replace")
    if child.returncode == -signal.SIGPIPE or (
            child.returncode != 0 and "error=Broken pipe" in text):
        # babeltrace2 died of SIGPIPE (the default action, which subprocess restores), or
        # a parent that ignores SIGPIPE made its write fail with EPIPE.
        raise ClosedPipe()
    if child.returncode != 0:
        if child.returncode < 0:
            raise ReportError(f"babeltrace2 was killed by signal {-child.returncode}")
        raise ReportError(explain_failure(text, child.returncode))
    return text


# --------------------------------------------------------------------- main

def _params(args: argparse.Namespace, metadata_dirs: list, output) -> dict:
    params = {"format": args.format}
    if args.salvage:
        params["salvage"] = True
    if output:
        params["output"] = output
    if args.pid is not None:
        params["pid"] = args.pid
    if args.tid is not None:
        params["tid"] = args.tid
    if args.modules:
        prefixes = [p.strip() for value in args.modules for p in value.split(",") if p.strip()]
        if not prefixes:
            raise UsageError("--modules names no module: give comma-separated module names, "
                             "e.g. --modules myproj,numpy")
        params["modules"] = ",".join(prefixes)
    if args.min_duration:
        params["min-duration"] = args.min_duration
    if args.format in ("profile", "lines"):
        if args.sort != "self":
            params["sort"] = args.sort
        params["limit"] = DEFAULT_LIMIT if args.limit is None else args.limit
    elif args.limit is not None:
        raise UsageError("--limit is for the profile and lines formats (tree: --min-share, "
                         "chrome: --max-size)")
    elif args.sort != "self":
        raise UsageError("--sort is for the profile and lines formats")
    if args.format == "tree":
        share = DEFAULT_MIN_SHARE if args.min_share is None else args.min_share
        if share:
            params["min-share"] = f"{share:g}"
    elif args.min_share is not None:
        raise UsageError("--min-share is for the tree format")
    if args.format == "chrome":
        size = DEFAULT_MAX_SIZE_MB if args.max_size is None else args.max_size
        if size:
            params["max-size"] = max(1, int(size * 10**6))
    elif args.max_size is not None:
        raise UsageError("--max-size is for the chrome format")
    if args.merge_processes:
        params["merge-processes"] = True
    if args.raw_names:
        params["raw-names"] = True

    start = []

    def trace_start_once() -> int:
        if not start:
            start.append(trace_start(metadata_dirs, args.timeout))
        return start[0]

    for option, name in (("begin", "--from"), ("end", "--to")):
        text = getattr(args, option)
        if text is None:
            continue
        try:
            params[option] = parse_time(text, trace_start_once)
        except ValueError as error:
            raise UsageError(f"{name}: {error}") from None
        if not -(2**63) <= params[option] < 2**63:
            raise UsageError(f"{name}: {text!r} is out of range")
    if "begin" in params and "end" in params and params["begin"] > params["end"]:
        raise UsageError(f"--from {args.begin} is after --to {args.end}")
    return params


def _output_target(path: str) -> str:
    """Checks -o FILE before babeltrace2 runs; its absolute path."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        raise UsageError(f"-o {path} is a directory: give a file name")
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise UsageError(f"-o {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) and not os.access(path, os.W_OK):
        raise UsageError(f"-o {path}: cannot write into {parent}")
    return path


def _temporary_beside(path: str) -> str:
    """A new empty file in path's directory, with the mode a new file gets."""
    try:
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path),
                                         prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as error:
        raise ReportError(f"cannot write -o {path}: {error.strerror}") from None
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)
    return temporary


def report(args: argparse.Namespace) -> int:
    """Runs one report as parsed by _parser(). Raises UsageError, ReportError."""
    output = _output_target(args.output) if args.output else None
    metadata = [m for trace in args.traces for m in find_metadata(trace)]
    texts = {path: check_metadata(path) for path in metadata}
    _require_babeltrace2()
    damages, is_readable = salvage.find_damage(texts)
    if damages and not is_readable:
        raise ReportError(f"damaged trace: not one packet of its data streams is complete "
                          f"({damages[0].describe()})")
    if damages and not args.salvage:
        raise ReportError(f"damaged trace: {damages[0].describe()} (without --no-salvage, "
                          "pyust reports what can be read)")
    for damage in damages:
        print(f"pyust: warning: damaged trace: {damage.describe()}", file=sys.stderr)
    copies = salvage.temporary_directory() if damages else None
    try:
        traces = salvage.salvaged_copy(args.traces, damages, copies) if damages else args.traces
        return _report(args, traces, metadata, output)
    finally:
        if copies:
            salvage.remove(copies)


def _report(args: argparse.Namespace, traces: list, metadata: list, output) -> int:
    params = _params(args, sorted({os.path.dirname(m) for m in metadata}), output)
    plugin_path = plugin_dirs()
    debug_info = has_native_events(metadata)
    expand = has_batches(metadata)
    if args.show_command:
        print(shlex.join(babeltrace2_command(traces, params, plugin_path, debug_info, expand)),
              file=sys.stderr)

    # A new file or a regular one is written beside the target and renamed at the end,
    # so that a failed run leaves the previous file as it was; a symbolic link (such as
    # /dev/stdout), a device or a pipe is written to in place.
    temporary = None
    if output and (not os.path.lexists(output) or
                   (os.path.isfile(output) and not os.path.islink(output))):
        temporary = params["output"] = _temporary_beside(output)
    try:
        sys.stdout.flush()
        notes = run_babeltrace2(
            babeltrace2_command(traces, params, plugin_path, debug_info, expand), args.timeout)
        if temporary:
            os.replace(temporary, output)
            temporary = None
    finally:
        if temporary:
            os.unlink(temporary)
    sys.stderr.write(_salvage_notes(notes))
    return 0


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


_DAMAGE_NOTE = re.compile(r"^Damaged trace: (.*)\n(.*)$", re.M)
_CUT_NOTE = re.compile(r"^Chrome trace cut: ", re.M)


def _salvage_notes(notes: str) -> str:
    """babeltrace2's standard error after a run the sink salvaged (it stopped at an error
    and reported what came before): its error log, then the sink's "Damaged trace: ..."
    note, become one warning. Other notes are kept as they are."""
    notes = _CUT_NOTE.sub("pyust: note: chrome: ", notes)
    damage = _DAMAGE_NOTE.search(notes)
    if not damage:
        return notes
    kept = [line for line in notes[:damage.start()].splitlines(keepends=True)
            if not _LOG_LINE.match(line)]
    reason = _ADDRESS.sub("", damage.group(1)).rstrip(", ")
    return ("".join(kept).rstrip("\n") + ("\n" if kept else "") +
            f"pyust: warning: damaged trace: {reason}; {_lower_first(damage.group(2))}\n" +
            notes[damage.end():].lstrip("\n"))


def _end_as_closed_pipe() -> None:
    """Ends the process as a Unix tool ends when its reader goes away: silently, killed
    by SIGPIPE (the shell's status 141), babeltrace2 already gone."""
    # Python would report the closed pipe again when it flushes standard output at exit.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    sys.exit(128 + signal.SIGPIPE)  # not reached, unless SIGPIPE is blocked


def main(argv: list) -> int:
    """`python -m pyust report ARGS`: the exit status (0, 1 when the trace or
    babeltrace2 fails, 2 for a bad option). One line `pyust: error: ...` on
    standard error for each failure; bugs keep their traceback. When standard
    output is a pipe whose reader is gone, the process ends killed by SIGPIPE,
    as `cat` does, without a message."""
    try:
        return report(_parser().parse_args(argv))
    except (ClosedPipe, BrokenPipeError):
        _end_as_closed_pipe()
    except UsageError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 2
    except ReportError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1


__all__ = ["main", "ReportError", "parse_duration", "parse_time", "check_metadata",
           "find_metadata", "param_string", "babeltrace2_command", "plugin_dirs"]
