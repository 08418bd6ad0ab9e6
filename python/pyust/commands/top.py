"""`python -m pyust top URL`: the hottest functions of a live session, refreshed every
second.

    python -m pyust top net://HOST[:PORT]/host/HOSTNAME/SESSION [--interval S] [--count N]
           [--modules PREFIXES] [--pid N] [--rows N]
    python -m pyust top net://HOST[:PORT]          the live sessions of that relay daemon

How: babeltrace2's live source (src.ctf.lttng-live) reads the session from the relay
daemon until the session ends; pyust's sink (sink.pyust.report, format=top) keeps the
stacks of every thread and, every `period` ns of wall time, writes the table of the
interval: each function's self time (the frames still open count up to the latest time
the trace vouches for), inclusive time and completed calls, then its totals since top
started. On a terminal each table replaces the previous one; otherwise the tables
follow one another. `count` stops after that many tables. So this module only checks
the URL, asks the relay daemon which sessions it has (babeltrace2 query), and runs

    babeltrace2 [--plugin-path DIR] -c src.ctf.lttng-live -p inputs=["URL"] \\
        -c sink.pyust.report -p format="top" -p period=NS ...

without a shell, like `pyust report`: any interpreter, bt2 or not.

Why wall time, not trace time: a live session arrives in bursts (every live-timer
period of the session), and a program that waits emits nothing; tables on trace time
would come in bursts or not at all.

A live reader joins the session where it is now, after the python:code events of the
code already running: such functions are named from their call events (`?:qualname`,
module unknown, so --modules cannot pick them) until a registration comes.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
import textwrap

from .. import args as cli_args, babeltrace
from ..args import UsageError
from ..babeltrace import BabeltraceError

_URL = re.compile(r"(net6?://(?:\[[^\]]+\]|[^:/\[\]]+)(?::\d+)?)(?:/host/([^/]+)/([^/]+))?/?")
# lttng-live's note while a session has no data yet: not worth a line under the table.
_NOISE = ("Waiting for data availability",)


def _interval_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"bad interval {text!r}: expected seconds, "
                                         "0.01 to 3600")
    return value


def _rows_arg(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()):
        raise argparse.ArgumentTypeError(f"bad row count {text!r}: expected a number >= 0")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = cli_args.Parser(
        prog=cli_args.program("top"), man="pyust-top",
        description=textwrap.fill(
            "Show the hottest functions of a live LTTng session (pyust run --live), "
            "refreshed every second, read from its relay daemon by babeltrace2's live "
            "source and pyust's plugin. With only net://HOST[:PORT], list that relay "
            "daemon's sessions.", 79),
        epilog=textwrap.dedent("""\
            columns: %self (self time / the interval: 100 = one thread busy in it all
            along), self_ms, total_ms (inclusive) and ncalls (calls completed) in the
            interval, then cum_self_ms and cum_calls since top started.
            It ends when the session ends (lttng destroy), after --count tables, or
            at Ctrl-C. Functions that were registered before top joined the session
            show as ?:qualname (their module is unknown to top)."""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("url", metavar="URL",
                        help="net://RELAYD[:LIVE_PORT]/host/HOSTNAME/SESSION, as `pyust run "
                             "--live` prints it; or net://RELAYD[:LIVE_PORT] to list sessions")
    parser.add_argument("--interval", type=_interval_arg, default=1.0, metavar="S",
                        help="seconds between tables, of wall time (default: 1)")
    parser.add_argument("--count", type=cli_args.positive_count, metavar="N",
                        help="stop after N tables (default: when the session ends)")
    parser.add_argument("--rows", type=_rows_arg, metavar="N",
                        help="functions per table (default: the terminal's height, or 20; "
                             "0: all)")
    parser.add_argument("--pid", type=cli_args.ident, metavar="N", help="only process N (its vpid)")
    parser.add_argument("--modules", action="append", metavar="PREFIXES",
                        help="only frames of these modules (comma-separated prefixes, as for "
                             "pyust report); repeatable")
    parser.add_argument("--timeout", type=cli_args.timeout, default=0.0, metavar="S",
                        help="stop after S seconds (default: 0, no limit)")
    parser.add_argument("--show-command", action="store_true",
                        help="print the babeltrace2 command line on standard error first")
    return parser


def _rows(args: argparse.Namespace) -> int:
    if args.rows is not None:
        return args.rows
    if sys.stdout.isatty():
        return max(5, shutil.get_terminal_size().lines - 5)
    return 20


def top_command(args: argparse.Namespace, url: str) -> list:
    """The babeltrace2 argument vector (no shell)."""
    command = ["babeltrace2"]
    for directory in babeltrace.plugin_dirs():
        command += ["--plugin-path", directory]
    command += ["-c", "src.ctf.lttng-live", "-p", f"inputs=[{babeltrace.param_string(url)}]",
                "-p", 'session-not-found-action="continue"',
                # A live session's metadata grows as it goes: expand fast-mode
                # batches whether or not they are declared yet (a standard
                # trace passes through unchanged).
                "-c", "filter.pyust.expand",
                "-c", "sink.pyust.report", "-p", 'format="top"',
                "-p", f"period={round(args.interval * 1e9)}", "-p", f"rows={_rows(args)}"]
    if args.count:
        command += ["-p", f"count={args.count}"]
    if args.pid is not None:
        command += ["-p", f"pid={args.pid}"]
    modules = cli_args.module_prefixes(args.modules)
    if modules:
        command += ["-p", f"modules={babeltrace.param_string(modules)}"]
    return command


def top(args: argparse.Namespace) -> int:
    """Runs top as parsed by _parser(). Raises UsageError, BabeltraceError."""
    match = _URL.fullmatch(args.url)
    if not match:
        raise UsageError(f"bad URL {args.url!r}: expected net://RELAYD[:PORT]/host/HOSTNAME/"
                         "SESSION (as pyust run --live prints it), or net://RELAYD[:PORT]")
    relay_url, hostname, name = match.groups()
    babeltrace.require()
    sessions = babeltrace.live_sessions(relay_url)
    if name is None:
        for session in sessions:
            print(f"{session.get('url', '?')}  ({session.get('stream-count', '?')} streams, "
                  f"{session.get('client-count', '?')} readers)")
        if not sessions:
            print(f"pyust: no live session on {relay_url}", file=sys.stderr)
        return 0
    url = f"{relay_url}/host/{hostname}/{name}"
    if not any(s.get("session-name") == name and s.get("target-hostname") == hostname
               for s in sessions):
        there = ", ".join(s.get("url", "?") for s in sessions) or "none"
        print(f"pyust: no session {name} of host {hostname} on {relay_url} yet: waiting for it "
              f"(Ctrl-C to stop; sessions there: {there})", file=sys.stderr)
    command = top_command(args, url)
    if args.show_command:
        print(shlex.join(command), file=sys.stderr)
    sys.stdout.flush()
    try:
        notes = babeltrace.run(command, args.timeout)
    except KeyboardInterrupt:
        return 0  # the usual way to leave top
    except babeltrace.TimedOut:
        return 0  # --timeout: the tables so far are the answer
    sys.stderr.write("".join(line for line in notes.splitlines(keepends=True)
                             if not line.strip().startswith(_NOISE)))
    return 0


def main(argv: list) -> int:
    """`python -m pyust top ARGS`: the exit status (0; 1 when the relay daemon or
    babeltrace2 fails; 2 for a bad option: cli.main answers UsageError)."""
    try:
        return top(_parser().parse_args(argv))
    except BabeltraceError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
