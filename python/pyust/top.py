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
import subprocess
import sys
import textwrap

from .cli import UsageError, _Parser
from .report import (ReportError, _id_arg, _require_babeltrace2, _timeout_arg, explain_failure,
                     param_string, plugin_dirs, run_babeltrace2)

_URL = re.compile(r"(net6?://(?:\[[^\]]+\]|[^:/\[\]]+)(?::\d+)?)(?:/host/([^/]+)/([^/]+))?/?")
QUERY_TIMEOUT = 15.0
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


def _count_arg(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or int(text) == 0:
        raise argparse.ArgumentTypeError(f"bad count {text!r}: expected a number >= 1")
    return int(text)


def _rows_arg(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()):
        raise argparse.ArgumentTypeError(f"bad row count {text!r}: expected a number >= 0")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m pyust top",
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
    parser.add_argument("--count", type=_count_arg, metavar="N",
                        help="stop after N tables (default: when the session ends)")
    parser.add_argument("--rows", type=_rows_arg, metavar="N",
                        help="functions per table (default: the terminal's height, or 20; "
                             "0: all)")
    parser.add_argument("--pid", type=_id_arg, metavar="N", help="only process N (its vpid)")
    parser.add_argument("--modules", action="append", metavar="PREFIXES",
                        help="only frames of these modules (comma-separated prefixes, as for "
                             "pyust report); repeatable")
    parser.add_argument("--timeout", type=_timeout_arg, default=0.0, metavar="S",
                        help="stop after S seconds (default: 0, no limit)")
    parser.add_argument("--show-command", action="store_true",
                        help="print the babeltrace2 command line on standard error first")
    return parser


def list_sessions(relay_url: str) -> list:
    """The live sessions of the relay daemon at relay_url (net://HOST[:PORT]), as dicts
    (session-name, target-hostname, url, client-count, stream-count). Raises ReportError
    when it cannot be reached."""
    command = ["babeltrace2", "query", "src.ctf.lttng-live", "sessions",
               "-p", f"url={param_string(relay_url)}"]
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, errors="replace", timeout=QUERY_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise ReportError(f"the relay daemon at {relay_url} did not answer within "
                          f"{QUERY_TIMEOUT:g} s") from None
    if result.returncode != 0:
        raise ReportError(f"cannot list the live sessions of {relay_url} (is an lttng-relayd "
                          f"listening there, on its live port, 5344 by default?): "
                          f"{explain_failure(result.stderr, result.returncode)}")
    sessions = []
    for line in result.stdout.splitlines():
        match = re.match(r"^(-?)\s*([\w-]+):\s*(.*)$", line)
        if line.strip() == "-" or (match and match.group(1)):
            sessions.append({})
        if match and sessions:
            sessions[-1][match.group(2)] = match.group(3).strip()
    return [s for s in sessions if s]


def _rows(args: argparse.Namespace) -> int:
    if args.rows is not None:
        return args.rows
    if sys.stdout.isatty():
        return max(5, shutil.get_terminal_size().lines - 5)
    return 20


def top_command(args: argparse.Namespace, url: str) -> list:
    """The babeltrace2 argument vector (no shell)."""
    command = ["babeltrace2"]
    for directory in plugin_dirs():
        command += ["--plugin-path", directory]
    command += ["-c", "src.ctf.lttng-live", "-p", f"inputs=[{param_string(url)}]",
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
    if args.modules:
        prefixes = [p.strip() for value in args.modules for p in value.split(",") if p.strip()]
        if not prefixes:
            raise UsageError("--modules names no module: e.g. --modules myproj,numpy")
        command += ["-p", f"modules={param_string(','.join(prefixes))}"]
    return command


def top(args: argparse.Namespace) -> int:
    """Runs top as parsed by _parser(). Raises UsageError, ReportError."""
    match = _URL.fullmatch(args.url)
    if not match:
        raise UsageError(f"bad URL {args.url!r}: expected net://RELAYD[:PORT]/host/HOSTNAME/"
                         "SESSION (as pyust run --live prints it), or net://RELAYD[:PORT]")
    relay_url, hostname, name = match.groups()
    _require_babeltrace2()
    sessions = list_sessions(relay_url)
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
        notes = run_babeltrace2(command, args.timeout)
    except KeyboardInterrupt:
        return 0  # the usual way to leave top
    except ReportError as error:
        if "did not finish within" in str(error):
            return 0  # --timeout: the tables so far are the answer
        raise
    sys.stderr.write("".join(line for line in notes.splitlines(keepends=True)
                             if not line.strip().startswith(_NOISE)))
    return 0


def main(argv: list) -> int:
    """`python -m pyust top ARGS`: the exit status (0; 1 when the relay daemon or
    babeltrace2 fails; 2 for a bad option: cli.main answers UsageError)."""
    try:
        return top(_parser().parse_args(argv))
    except ReportError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
