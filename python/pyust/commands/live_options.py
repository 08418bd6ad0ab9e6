"""The live-session options that `pyust run` and `pyust attach` share (--live,
--relayd, --relayd-timeout, --live-port, --live-timer), and the relay daemon they name
(pyust.live)."""

from __future__ import annotations

import argparse

from .. import live
from ..args import UsageError


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--live", action="store_true",
                        help="a live session: the trace streams through an lttng-relayd, "
                             "readable while it is recorded (pyust top URL, babeltrace2 "
                             "--input-format=lttng-live URL); without --relayd, one on "
                             f"127.0.0.1 (started if none listens on port {live.CONTROL_PORT}; "
                             "refused when another user than you or root holds its ports)")
    parser.add_argument("--relayd", metavar="URL",
                        help="with --live: the relay daemon, net://HOST[:CTRL_PORT[:DATA_PORT]] "
                             f"(default ports {live.CONTROL_PORT}, {live.DATA_PORT})")
    parser.add_argument("--live-port", type=int, default=live.LIVE_PORT, metavar="PORT",
                        help=f"with --live: the relay daemon's live port, for the URL printed "
                             f"(default: {live.LIVE_PORT})")
    parser.add_argument("--relayd-timeout", type=float, default=live.DEFAULT_TIMEOUT,
                        metavar="SECONDS",
                        help="with --live: cut the relay daemon off when no byte has moved "
                             "to or from it for this long while data waits (a lost network, "
                             "a stopped daemon), so that the session ends without waiting "
                             "for TCP to give up (15 minutes), and say from when its trace "
                             f"is incomplete (default: {live.DEFAULT_TIMEOUT:g})")
    parser.add_argument("--live-timer", type=int, default=live.DEFAULT_TIMER_US, metavar="US",
                        help=f"with --live: flush to the relay daemon every US microseconds "
                             f"(default: {live.DEFAULT_TIMER_US})")


def relay(args: argparse.Namespace) -> live.Relay | None:
    """The relay daemon of --live [--relayd URL] once the options are checked, or None
    without them. Starts a relay daemon on loopback when none listens there. Raises
    UsageError, LttngError."""
    if not (args.live or args.relayd):
        return None
    check(args)
    try:
        return live.prepare(args.relayd, args.live_port, args.live_timer, args.relayd_timeout)
    except ValueError as error:
        raise UsageError(str(error)) from None


def check(args: argparse.Namespace) -> None:
    """Raises UsageError when the live options do not go together with the others (the
    --relayd URL is read by relay())."""
    if not (args.live or args.relayd):
        return
    if not args.live:
        raise UsageError("--relayd streams a live session: add --live")
    if args.output:
        raise UsageError("--output with --live: the relay daemon writes the trace, under its "
                         "own output directory (lttng-relayd -o)")
    if args.kernel:
        raise UsageError("--kernel with --live: not supported yet (perf writes its part into a "
                         "local trace directory): record the kernel with a local session")
    if not args.relayd_timeout > 0:
        raise UsageError("--relayd-timeout must be more than 0 seconds")
    if args.live_timer <= 0:
        raise UsageError("--live-timer must be a positive number of microseconds")
    if not 0 < args.live_port < 65536:
        raise UsageError(f"--live-port {args.live_port} is not a port number")
