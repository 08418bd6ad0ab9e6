"""`python -m pyust attach PID`: trace a Python process that is already running, from
now until Ctrl-C, --duration or its exit, then take pyust's hooks off again (getting
into the process and out again: pyust.remote)."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time

from .. import args as cli_args, babeltrace, lttng, remote, sessiond
from ..args import UsageError


def _parser() -> argparse.ArgumentParser:
    parser = cli_args.Parser(
        prog="python -m pyust attach",
        description=(
            "Trace a Python process that is already running, from now until Ctrl-C, "
            "--duration or the process's exit: create an LTTng session recording that "
            "process's python:* events, start pyust inside it (sys.remote_exec on Python "
            "3.14+, gdb on 3.10 to 3.13; its main thread starts tracing at its next "
            "safe point), then stop pyust there, taking its hooks off, and print the "
            "summary. The process runs on, untraced, as before."
        ),
    )
    parser.add_argument("pid", type=int, metavar="PID", help="the process to trace")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="trace directory, created private (0700); it must not exist or "
                             "be empty (default: lttng's, $LTTNG_HOME/lttng-traces/NAME-DATE-TIME)")
    parser.add_argument("--name", help="session name (default: pyust-attach-PID-TIME)")
    parser.add_argument("--duration", type=float, metavar="SECONDS",
                        help="record for this long, then detach (default: until Ctrl-C or "
                             "the process's exit)")
    parser.add_argument("--wait", type=float, default=30, metavar="SECONDS",
                        help="how long to wait for the process's main thread to run Python "
                             "and take pyust in (or out) (default: 30)")
    cli_args.add_channel_options(parser, lttng.TRACE_FORMATS)
    cli_args.add_filter_options(parser)
    parser.add_argument("--kernel", action="store_true",
                        help="also record the process's system calls and scheduling from the "
                             "attach on (as for run: LTTng's kernel tracer, else perf; root)")
    parser.add_argument("--native", action="store_true",
                        help="refused: native frames need lttng-ust's cyg-profile library "
                             "preloaded when the program starts (use pyust run --native)")
    return parser


def main(argv: list) -> int:
    """`python -m pyust attach ARGS`: 0, or 1 with one line when the process cannot be
    attached. Raises UsageError, LttngError."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.native:
        raise UsageError("--native cannot attach: native frames need liblttng-ust-cyg-profile "
                         "preloaded when the program starts (use pyust run --native)")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be more than 0 seconds")
    if args.wait <= 0:
        raise UsageError("--wait must be more than 0 seconds")
    trace_format = cli_args.trace_format(args, lttng.knows_trace_formats())
    try:
        target = remote.inspect(args.pid)
    except remote.AttachError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    sessiond.check_not_stopped(sessiond.current())
    output = cli_args.output_directory(args.output) if args.output else None
    name = args.name or f"pyust-attach-{args.pid}-{time.strftime('%Y%m%d-%H%M%S')}"
    config = lttng.ChannelConfig(subbuf_size=args.subbuf_size, num_subbuf=args.num_subbuf)
    sessiond.ensure_running()
    options = cli_args.hook_options(args)
    ending = []  # the signal that ends the recording, if one did
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, lambda signum, frame: ending.append(signum))
                for signum in handled}
    recorder = None
    if args.kernel:
        from .. import kernel  # only for --kernel

        recorder = kernel.choose()
    session = None
    attachment = None
    began = None
    exited = False
    stopped = False
    try:
        session = lttng.Session.create(name, output, trace_format=trace_format)
        session.set_metadata_timer()
        session.enable_python(config)
        session.track_user_pid(target.pid)
        if recorder:
            recorder.prepare(session)
        session.start()
        if recorder:
            recorder.follow(target.pid)
        attachment = remote.Attachment(target, options)
        attachment.start(args.wait, cancelled=lambda: bool(ending), on_wait=lambda: print(
            f"pyust: waiting for process {target.pid}'s main thread to run Python (it is in a "
            "system call or C code; Ctrl-C to give up)", file=sys.stderr))
        began = time.monotonic()
        print(f"pyust: attached to process {target.pid} (Python {target.version_text}, "
              f"{attachment.backend}): recording into {session.path}"
              + (f" for {args.duration:g} s" if args.duration else "; Ctrl-C to stop"),
              file=sys.stderr)
        deadline = began + args.duration if args.duration else None
        while not ending and (deadline is None or time.monotonic() < deadline):
            if not target.is_alive():
                exited = True
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - began
        attachment.detach(args.wait)
        if recorder:
            recorder.stop()
        session.stop()
        stopped = True
        discarded = session.discarded_events()
    except remote.AttachError as error:
        if began is None:  # nothing recorded: no trace to keep
            if session is not None:
                session.destroy()
                session = None
            if output:
                shutil.rmtree(output, ignore_errors=True)
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    finally:
        try:
            if attachment is not None:
                attachment.close()  # detaches first when still attached
            if recorder and not stopped:
                recorder.stop()
        finally:
            if session is not None:
                session.destroy(wait=not stopped)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    kernel_note = recorder.finish(session.path) if recorder else None
    if kernel_note:
        print(kernel_note, file=sys.stderr)
    recorded = None
    if attachment.events is not None and not (args.fast and discarded) and not recorder:
        recorded = attachment.events - discarded
    else:
        recorded = babeltrace.count_events(session.path, fast=args.fast)
    summary = f"pyust: trace in {session.path}: "
    summary += (f"{recorded} events recorded" if recorded is not None
                else "events not counted (babeltrace2 missing or failed)")
    summary += f", {discarded} discarded by LTTng; attached for {elapsed:.1f} s"
    if exited:
        summary += f"; process {target.pid} exited during the recording (the trace up to then " \
                   "is complete)"
    else:
        summary += f"; detached from process {target.pid}, which runs on untraced"
    print(summary, file=sys.stderr)
    return 0
