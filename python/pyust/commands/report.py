"""`python -m pyust report`: profiles, call trees and flame graphs of a trace.

    python -m pyust report TRACE... [--format profile|tree|lines|folded|chrome|svg|tasks]
           [-o FILE] [--pid N] [--tid N] [--modules PREFIXES] [--min-duration D] [--from T]
           [--to T] [--sort calls|self|total|mean] [--limit N] [--min-share P] [--max-depth N]
           [--tasks] [--max-size MB] [--max-metadata MB] [--merge-processes] [--raw-names]

The work is done by pyust's babeltrace2 plugin (src/plugin): this module checks the
arguments and the traces (every `metadata` file before babeltrace2 sees it, up to a bound
on its size: pyust.ctf; damage and salvage: pyust.salvage), then runs, through
pyust.babeltrace,

    babeltrace2 [--plugin-path DIR] TRACE... -c sink.pyust.report -p format="..." ... [> FILE]

--timeout covers the whole report, these checks included. -o FILE is opened here, not by
babeltrace2: the report goes to a new temporary file beside FILE, renamed over it once
complete (see _open_output).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import shlex
import signal
import stat
import sys
import tempfile
import textwrap
import threading
import time

from .. import args as cli_args, babeltrace, ctf, salvage
from ..args import UsageError
from ..babeltrace import BabeltraceError

FORMATS = ("profile", "tree", "lines", "folded", "chrome", "svg", "tasks")
SORT_KEYS = ("self", "total", "calls", "mean")
DEFAULT_TIMEOUT = 60.0
# The defaults that keep a big program's report readable (sympy's import gives 4,173
# functions and a 22 MB tree); each output says what they left out.
DEFAULT_LIMIT = 40          # profile and lines rows
DEFAULT_MIN_SHARE = 0.5     # tree: percent of the thread's time
# Chrome JSON of 20 MB loads in speedscope in headless Chromium (125 s on a busy 2-core
# machine), 61 MB did not within 300 s; Perfetto's UI crashes on 900 MB (its WebAssembly
# memory). doc/reports.md says when to raise it.
DEFAULT_MAX_SIZE_MB = 20
# Every other format: a bound no normal program's report comes near (sympy's import, the
# biggest of the tests: a 22 MB tree with --min-share 0), which a damaged or hostile trace's
# cannot pass either (a recursion 20,000 deep wrote 390 MB of tree and 2.6 GB of folded
# stacks).
DEFAULT_MAX_TEXT_SIZE_MB = 100
# tree, folded, svg: Python's default recursion limit, so that a program within it is never
# cut. A tree's indentation and a folded stack's text grow with the depth: past the limit, a
# call path's text no longer grows.
DEFAULT_MAX_DEPTH = 1000
# babeltrace2 2.0 needs about 35 times the metadata's size in memory, and time quadratic in the
# event classes: 16 MB took 1.2 GB and 4 minutes, 97 MB (10^6 event classes) 3.4 GB. LTTng's
# metadata is kilobytes for pyust's provider and a few megabytes for every kernel event.
DEFAULT_MAX_METADATA_MB = 16
DEPTH_FORMATS = ("tree", "folded", "svg", "tasks")
# The formats that --tasks makes async-aware (tasks always is).
TASK_FORMATS = ("tree", "folded", "svg")

_EPILOG = """\
formats:
  profile  per function: calls, self and inclusive time, mean (cProfile's table)
  tree     per thread, the call tree with inclusive and self times
  lines    per file:line, hits and time (traces recorded with --lines)
  folded   `frame;frame;frame self_ns` lines (flamegraph.pl, inferno, speedscope)
  chrome   Chrome Trace Event JSON (Perfetto UI, chrome://tracing, speedscope)
  svg      an interactive flame graph: click to zoom, hover, search
  tasks    per thread, its asyncio tasks: wall, running and awaiting time, what
           each awaited, how it ended, its call tree; then the frames outside tasks

asyncio: a coroutine's resumption is never counted as a call (each format). chrome
gives each task a lane of its own; --tasks puts a task's frames (tree, folded, svg)
under the task that created it, where it did, instead of under the event loop.

what the defaults leave out, each time with a last line saying so:
  profile, lines  the top 40 rows (--limit N; --limit 0: all), by self time (profile,
                  --sort calls|self|total|mean) or time (lines)
  tree            call paths under 0.5% of their thread's time (--min-share P; 0: all)
  tasks           the 40 tasks per thread that ran longest (--limit N; 0: all), and
                  call paths under 0.5% of their task's time (--min-share P)
  tree, folded, svg, tasks  call paths deeper than 1000 frames (--max-depth N; 0: none): what
                  a frame 1000 deep calls is one line, stack or box "[... N frames cut]"
                  with its time (a deep recursion's tree and folded stacks would grow
                  with the square of its depth)
  chrome          frames past 20 MB of JSON (--max-size MB; 0: no limit), so that
                  speedscope and Perfetto's UI load it; --min-duration 10us keeps the
                  whole timeline in fewer frames instead
  the others      lines past 100 MB (--max-size MB; 0: no limit)
Cuts by depth or size are also said on standard error. A trace whose metadata passes
16 MB is refused (--max-metadata MB; 0: no limit): babeltrace2 would need gigabytes.
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

-o FILE is replaced by renaming a new file over it once the report is complete: a link
at FILE is replaced, not followed (a device or pipe, or a link of root's or yours to
one, such as /dev/stdout, is written to in place).

Exit status: 0, 1 when the trace or babeltrace2 fails, 2 for a bad option.
A reader that stops reading (`pyust report TRACE | head`) ends the report
quietly, as it ends `cat` (killed by SIGPIPE: status 141 in the shell).
"""


def _parser() -> argparse.ArgumentParser:
    parser = cli_args.Parser(
        prog=cli_args.program("report"), man="pyust-report",
        description=textwrap.fill(
            "Rebuild the Python call stacks of LTTng traces recorded with pyust and "
            "write a report: the hottest functions (default), call trees, per-line "
            "times, folded stacks, a Chrome trace, an SVG flame graph or asyncio's tasks. Runs "
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
    parser.add_argument("--pid", type=cli_args.ident, metavar="N", help="only process N (its vpid)")
    parser.add_argument("--tid", type=cli_args.ident, metavar="N", help="only thread N (its vtid)")
    parser.add_argument("--modules", action="append", metavar="PREFIXES",
                        help="show only frames of these modules: comma-separated module-name "
                             "prefixes (numpy matches numpy.core, not numpyro; C functions by "
                             "their owner, e.g. builtins); the time of hidden frames goes to "
                             "their nearest shown caller; repeatable")
    parser.add_argument("--min-duration", type=cli_args.duration, metavar="D",
                        help="leave out call paths shorter than D (tree, folded, chrome, svg; "
                             "in folded their time goes to the caller), e.g. 10us, 2ms")
    parser.add_argument("--sort", choices=SORT_KEYS, default="self",
                        help="profile: order rows by self time (default), inclusive time, "
                             "calls or mean inclusive time per call; lines: by time "
                             "(self, total), hits (calls) or mean")
    parser.add_argument("--limit", type=cli_args.count, default=None, metavar="N",
                        help=f"profile, lines: show the first N rows; tasks: the N tasks per "
                             f"thread that ran longest (default: {DEFAULT_LIMIT}; 0: all)")
    parser.add_argument("--min-share", type=cli_args.share, default=None, metavar="P",
                        help=f"tree, tasks: leave out call paths under P%% of their thread's "
                             f"(tasks: task's) time (default: {DEFAULT_MIN_SHARE:g}; 0: none)")
    parser.add_argument("--tasks", action="store_true",
                        help="tree, folded, svg: asyncio tasks' frames under the task that "
                             "created them, where it did (its await chain: main > gather > "
                             "worker), instead of under the event loop's Handle._run")
    parser.add_argument("--max-depth", type=cli_args.count, default=None, metavar="N",
                        help=f"tree, folded, svg, tasks: cut call paths deeper than N frames, what "
                             f"a frame N deep calls shown as one '[... M frames cut]' "
                             f"(default: {DEFAULT_MAX_DEPTH}; 0: no limit)")
    parser.add_argument("--max-size", type=cli_args.megabytes, default=None, metavar="MB",
                        help=f"stop writing once the output reaches MB megabytes (chrome: "
                             f"stop adding frames that start after it), and say what was left "
                             f"out (default: {DEFAULT_MAX_SIZE_MB} for chrome, "
                             f"{DEFAULT_MAX_TEXT_SIZE_MB} for the others; 0: no limit)")
    parser.add_argument("--max-metadata", type=cli_args.megabytes, default=None, metavar="MB",
                        help=f"refuse a trace whose metadata file passes MB megabytes "
                             f"(default: {DEFAULT_MAX_METADATA_MB}; 0: no limit)")
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
    parser.add_argument("--timeout", type=cli_args.timeout, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"stop the report (checking the trace, then babeltrace2) after S "
                             f"seconds (default: {DEFAULT_TIMEOUT:g}; 0: no limit)")
    parser.add_argument("--no-salvage", dest="salvage", action="store_false",
                        help="fail on a damaged trace instead of reporting what can be read")
    parser.add_argument("--show-command", action="store_true",
                        help="print the babeltrace2 command line on standard error first")
    return parser


# --------------------------------------------------------------------- main

def _params(args: argparse.Namespace, metadata_dirs: list, deadline: "_Deadline") -> dict:
    params = {"format": args.format}
    if args.salvage:
        params["salvage"] = True
    if args.pid is not None:
        params["pid"] = args.pid
    if args.tid is not None:
        params["tid"] = args.tid
    modules = cli_args.module_prefixes(args.modules)
    if modules:
        params["modules"] = modules
    if args.min_duration:
        params["min-duration"] = args.min_duration
    if args.format in ("profile", "lines", "tasks"):
        if args.sort != "self" and args.format == "tasks":
            raise UsageError("--sort is for the profile and lines formats")
        if args.sort != "self":
            params["sort"] = args.sort
        params["limit"] = DEFAULT_LIMIT if args.limit is None else args.limit
    elif args.limit is not None:
        raise UsageError("--limit is for the profile, lines and tasks formats (tree: "
                         "--min-share, chrome: --max-size)")
    elif args.sort != "self":
        raise UsageError("--sort is for the profile and lines formats")
    if args.format in ("tree", "tasks"):
        share = DEFAULT_MIN_SHARE if args.min_share is None else args.min_share
        if share:
            params["min-share"] = f"{share:g}"
    elif args.min_share is not None:
        raise UsageError("--min-share is for the tree and tasks formats")
    if args.tasks:
        if args.format not in TASK_FORMATS:
            raise UsageError("--tasks is for the tree, folded and svg formats (the tasks "
                             "format always shows tasks, chrome gives each a lane)")
        params["tasks"] = True
    if args.max_size is not None:
        size = args.max_size
    else:
        size = DEFAULT_MAX_SIZE_MB if args.format == "chrome" else DEFAULT_MAX_TEXT_SIZE_MB
    if size:
        params["max-size"] = max(1, int(size * 10**6))
    if args.format in DEPTH_FORMATS:
        depth = DEFAULT_MAX_DEPTH if args.max_depth is None else args.max_depth
        if depth:
            params["max-depth"] = depth
    elif args.max_depth is not None:
        raise UsageError("--max-depth is for the tree, folded, svg and tasks formats")
    if args.merge_processes:
        params["merge-processes"] = True
    if args.raw_names:
        params["raw-names"] = True

    start = []

    def trace_start_once() -> int:
        if not start:
            start.append(babeltrace.trace_start(metadata_dirs, deadline.remaining()))
        return start[0]

    for option, name in (("begin", "--from"), ("end", "--to")):
        text = getattr(args, option)
        if text is None:
            continue
        try:
            params[option] = cli_args.parse_time(text, trace_start_once)
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


def _is_special(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _is_trusted_link(path: str, link: os.stat_result) -> bool:
    """Whether the link at path is root's or the caller's, in a directory where nobody else
    can replace it (owned by root or the caller, and writable by nobody else unless sticky):
    /dev/stdout, /proc/self/fd/1, a link of one's own."""
    mine = (0, os.geteuid())
    try:
        directory = os.stat(os.path.dirname(path))
    except OSError:
        return False
    return (link.st_uid in mine and directory.st_uid in mine and
            (not directory.st_mode & 0o022 or bool(directory.st_mode & stat.S_ISVTX)))


def _open_output(path: str, deadline: "_Deadline") -> tuple:
    """-o path opened for the report: (descriptor, temporary), temporary the file to rename
    over path once the report is complete, or None when path is written in place.

    A report is written to a new file beside path (mkstemp: O_EXCL, never opened by name
    again) and renamed over it: whoever can write in path's directory cannot make it
    write anywhere else (a rename replaces a link planted at path, not its target), and a
    failed run leaves the previous file as it was. Written in place: a device, a pipe or a
    socket that is path itself (opened without following a link), or that a trusted link
    (_is_trusted_link: /dev/stdout) leads to. Raises BabeltraceError."""
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        link = None
    except OSError as error:
        raise BabeltraceError(f"cannot write -o {path}: {error.strerror}") from None
    in_place = link is not None and (
        _is_special(link.st_mode) or
        (stat.S_ISLNK(link.st_mode) and _is_trusted_link(path, link)))
    if in_place:
        flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC
        if not stat.S_ISLNK(link.st_mode):
            flags |= os.O_NOFOLLOW
        try:
            with deadline.alarm():  # a pipe's open waits for its reader
                fd = os.open(path, flags)
        except OSError as error:
            if not stat.S_ISLNK(link.st_mode) or error.errno not in (errno.ENOENT,
                                                                       errno.EISDIR):
                raise BabeltraceError(f"cannot write -o {path}: {error.strerror}") from None
            fd = None  # a trusted link to no file, or to a directory: replaced
        if fd is not None:
            if _is_special(os.fstat(fd).st_mode):
                return fd, None
            os.close(fd)  # a link to a regular file: replaced like any other
    try:
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path),
                                         prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as error:
        raise BabeltraceError(f"cannot write -o {path}: {error.strerror}") from None
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # the mode a new file gets (mkstemp's is 0600)
    return fd, temporary


class _Deadline:
    """The end of the time --timeout gives the whole report: reading and checking the
    metadata, walking the packets for damage, the salvaged copy, then babeltrace2."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds if seconds else None

    def expired(self) -> babeltrace.TimedOut:
        return babeltrace.TimedOut(
            f"pyust report did not finish within {self.seconds:g} s and was stopped: a damaged "
            "trace, or a large one (raise --timeout; 0 for no limit)")

    def remaining(self) -> float:
        """The seconds left, for a child process's timeout (0: no limit). Raises TimedOut
        when none are."""
        if self.end is None:
            return 0
        left = self.end - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    @contextlib.contextmanager
    def alarm(self):
        """Runs the block (Python's own work, no child process) under a timer: at the
        deadline, SIGALRM raises TimedOut wherever it is (regular expressions over the
        metadata included: the re module checks for signals)."""
        if self.end is None or threading.current_thread() is not threading.main_thread():
            yield
            return

        def expire(_signum, _frame):
            raise self.expired()

        previous = signal.signal(signal.SIGALRM, expire)
        try:
            signal.setitimer(signal.ITIMER_REAL, self.remaining())
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _checked_metadata(path: str, max_mb: float) -> bytes:
    """The text of the metadata file at path (ctf.check_metadata) when it holds at most
    max_mb megabytes (0: no limit)."""
    try:
        return ctf.check_metadata(path, int(max_mb * 10**6)).text
    except ctf.MetadataTooLarge as error:
        raise ctf.CtfError(f"the metadata file {path} holds {error.size / 1e6:.1f} MB, more "
                           f"than a report reads ({max_mb:g} MB): babeltrace2 would need about "
                           "35 times as much memory (a damaged or hostile trace? --max-metadata "
                           "MB raises the limit, 0 for none)") from None


def report(args: argparse.Namespace) -> int:
    """Runs one report as parsed by _parser(). Raises UsageError, BabeltraceError,
    ctf.CtfError."""
    deadline = _Deadline(args.timeout)
    output = _output_target(args.output) if args.output else None
    max_metadata = DEFAULT_MAX_METADATA_MB if args.max_metadata is None else args.max_metadata
    copies = None
    try:
        with deadline.alarm():
            metadata = [m for trace in args.traces for m in ctf.find_metadata(trace)]
            texts = {path: _checked_metadata(path, max_metadata) for path in metadata}
            babeltrace.require()
            damages, is_readable = salvage.find_damage(texts)
            if damages and not is_readable:
                raise BabeltraceError(f"damaged trace: not one packet of its data streams is "
                                      f"complete ({damages[0].describe()})")
            if damages and not args.salvage:
                raise BabeltraceError(f"damaged trace: {damages[0].describe()} (without "
                                      "--no-salvage, pyust reports what can be read)")
            for damage in damages:
                print(f"pyust: warning: damaged trace: {damage.describe()}", file=sys.stderr)
            copies = salvage.temporary_directory() if damages else None
            traces = salvage.salvaged_copy(args.traces, damages, copies) if damages \
                else args.traces
        try:
            return _report(args, traces, texts, output, deadline)
        except babeltrace.TimedOut:  # given what was left: say the whole time
            raise deadline.expired() from None
    finally:
        if copies:
            salvage.remove(copies)


def _report(args: argparse.Namespace, traces: list, metadata: dict, output,
            deadline: _Deadline) -> int:
    """metadata: each metadata file's path and text."""
    params = _params(args, sorted({os.path.dirname(m) for m in metadata}), deadline)
    plugin_path = babeltrace.plugin_dirs()
    debug_info = babeltrace.has_native_events(metadata.values())
    expand = babeltrace.has_batches(metadata.values())
    command = babeltrace.report_command(traces, params, plugin_path, debug_info, expand)
    if args.show_command:
        print(shlex.join(command) + (f" > {shlex.quote(output)}" if output else ""),
              file=sys.stderr)
    sys.stdout.flush()
    if not output:
        notes = babeltrace.run(command, deadline.remaining())
        sys.stderr.write(_salvage_notes(notes))
        return 0
    fd, temporary = _open_output(output, deadline)
    try:
        try:
            notes = babeltrace.run(command, deadline.remaining(), stdout=fd)
        except BabeltraceError as error:
            # The sink wrote to its standard output: name the file.
            raise type(error)(str(error).replace("path=stdout", f"path={output}")) from None
        if temporary:
            os.replace(temporary, output)
            temporary = None
    finally:
        os.close(fd)
        if temporary:
            os.unlink(temporary)
    sys.stderr.write(_salvage_notes(notes))
    return 0


def _salvage_notes(notes: str) -> str:
    """babeltrace2's standard error after a run: when the sink salvaged a damaged trace
    (it stopped at an error and reported what came before, and said so in one warning),
    without babeltrace2's log lines about that error; else as it is."""
    lines = notes.splitlines(keepends=True)
    damage = next((i for i, line in enumerate(lines)
                   if line.startswith(babeltrace.DAMAGE_NOTE)), None)
    if damage is None:
        return notes
    return "".join([line for line in lines[:damage] if not babeltrace.is_log_line(line)]
                   + lines[damage:])


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
    except (babeltrace.ClosedPipe, BrokenPipeError):
        _end_as_closed_pipe()
    except UsageError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 2
    except (BabeltraceError, ctf.CtfError) as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1


