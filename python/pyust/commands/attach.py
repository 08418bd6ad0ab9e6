"""`python -m pyust attach PID`: trace a Python process that is already running, from
now until Ctrl-C, --duration or its exit, then take pyust's hooks off again (getting
into the process and out again: pyust.remote)."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time

from .. import args as cli_args, attach_target, babeltrace, live, lttng, remote, sessiond, tally
from ..args import UsageError
from . import live_options


def _parser() -> argparse.ArgumentParser:
    parser = cli_args.Parser(
        prog=cli_args.program("attach"), man="pyust-attach",
        description=(
            "Trace a Python process that is already running, from now until Ctrl-C, "
            "--duration or the process's exit: create an LTTng session recording that "
            "process's python:* events, start pyust inside it (sys.remote_exec on Python "
            "3.14+, gdb on 3.10 to 3.13; its main thread starts tracing at its next "
            "safe point), then stop pyust there, taking its hooks off, and print the "
            "summary. The process runs on, untraced, as before. With --live, the session "
            "streams through a relay daemon: `pyust top URL` shows it while it records. "
            "As root, for another user's process: pyust writes nothing that user can write "
            "(the process answers in a directory of its own, read as data and bounded), and "
            "runs nothing of theirs (the interpreter's version is read from its executable)."
        ),
    )
    parser.add_argument("pid", type=int, metavar="PID", help="the process to trace")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="trace directory, created private (0700); it must not exist or "
                             "be empty, and not be a symbolic link; it and its parents must be "
                             "yours or root's and writable by nobody else (a parent may be if "
                             "sticky, as /tmp) (default: as lttng names it, "
                             "$LTTNG_HOME/lttng-traces/NAME-DATE-TIME, or "
                             "pyust-attach-PID-DATE-TIME without --name)")
    parser.add_argument("--name", help="session name (default: pyust-attach-PID-DATE-TIME; pyust-attach-PID with --live)")
    parser.add_argument("--duration", type=float, metavar="SECONDS",
                        help="record for this long, then detach (default: until Ctrl-C or "
                             "the process's exit)")
    live_options.add(parser)
    parser.add_argument("--wait", type=float, default=30, metavar="SECONDS",
                        help="how long to wait for the process's main thread to run Python "
                             "and take pyust in (or out) (default: 30)")
    cli_args.add_channel_options(parser, lttng.TRACE_FORMATS)
    cli_args.add_filter_options(parser)
    parser.add_argument("--kernel", action="store_true",
                        help="also record the process's system calls and scheduling from the "
                             "attach on (as for run: LTTng's kernel tracer, else perf; root)")
    cli_args.add_start_timeout(parser, "the process waits, at the attach point, before it "
                                       "runs on traced,")
    parser.add_argument("--native", action="store_true",
                        help="refused: native frames need lttng-ust's cyg-profile library "
                             "preloaded when the program starts (use pyust run --native)")
    return parser


def main(argv: list) -> int:
    """`python -m pyust attach ARGS`: 0, or 1 with one line when the process cannot be
    attached. Raises UsageError, LttngError."""
    args = _parser().parse_args(argv)
    _check_options(args)
    trace_format = cli_args.trace_format(args, lttng.knows_trace_formats())
    try:
        target = attach_target.inspect(args.pid)
    except attach_target.AttachError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    sessiond.check_not_stopped(sessiond.current())
    relay = live_options.relay(args)
    output = cli_args.output_directory(args.output) if args.output else None
    stamp = time.strftime('%Y%m%d-%H%M%S')
    # A relay daemon dates the directory of each session itself: pyust-attach-PID alone.
    name = args.name or (f"pyust-attach-{args.pid}" if relay else
                         f"pyust-attach-{args.pid}-{stamp}")
    sessiond.ensure_running()
    recorder = None
    if args.kernel:
        from .. import kernel  # only for --kernel

        recorder = kernel.choose()
    ending = []  # the signal that ends the recording, if one did
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, lambda signum, frame: ending.append(signum))
                for signum in handled}
    recording = _Recording(target, recorder, relay)
    try:
        # Without --output, lttng's directory, with one date (pyust's names have it).
        recording.open(name, output or (None if relay else lttng.default_output(
            f"{args.name}-{stamp}" if args.name else name)), trace_format,
                       lttng.ChannelConfig(subbuf_size=args.subbuf_size,
                                           num_subbuf=args.num_subbuf))
        recording.attach(dict(cli_args.hook_options(args), start_wait=args.start_timeout),
                         args.wait, ending)
        where = (f"streaming to the relay daemon at {relay.url}" if relay
                 else f"recording into {recording.session.path}")
        print(f"pyust: attached to process {target.pid} (Python {target.version_text}, "
              f"{recording.attachment.backend}): {where}"
              + (f" for {args.duration:g} s" if args.duration else "; Ctrl-C to stop"),
              file=sys.stderr)
        recording.record(args.duration, ending)
        recording.stop(args.wait)
    except attach_target.AttachError as error:
        if recording.began is None:  # nothing recorded: no trace to keep
            recording.discard(output)
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    finally:
        try:
            recording.close()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    print(_summary(recording, args.fast), file=sys.stderr)
    return 0


def _check_options(args: argparse.Namespace) -> None:
    """Raises UsageError for what attach refuses before it looks at the process."""
    if args.native:
        raise UsageError("--native cannot attach: native frames need liblttng-ust-cyg-profile "
                         "preloaded when the program starts (use pyust run --native)")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be more than 0 seconds")
    if args.wait <= 0:
        raise UsageError("--wait must be more than 0 seconds")
    cli_args.check_start_timeout(args)
    live_options.check(args)


class _Recording:
    """One attach, in its order: the session (local or live) started, pyust started in
    the process, the recording until its end, pyust stopped there and the session
    stopped; close() undoes whatever of it was done, whatever failed."""

    def __init__(self, target: attach_target.Target, recorder, relay: live.Relay | None):
        self.target = target
        self.recorder = recorder  # the kernel's (--kernel), or None
        self.relay = relay
        self.session = None
        self.attachment = None
        self.began = None  # monotonic time pyust started recording in the process
        self.elapsed = None
        self.exited = False  # the process exited during the recording
        self.stopped = False  # the session is stopped: its trace is complete
        self.discarded = None

    def open(self, name: str, output: str | None, trace_format: str | None,
             config: lttng.ChannelConfig) -> None:
        """Creates and starts the session, recording only the target's python:* events
        (and its kernel events with --kernel); with --live, says the URL to read it at."""
        if self.relay:
            self.session = self.relay.create(name, trace_format)
        else:
            self.session = lttng.Session.create(name, output, trace_format=trace_format)
        self.session.set_metadata_timer()
        self.session.enable_python(config)
        self.session.track_user_pid(self.target.pid)
        if self.recorder:
            self.recorder.prepare(self.session)
        self.session.start()
        if self.recorder:
            self.recorder.follow(self.target.pid)
        if self.relay:
            self.relay.announce(name)

    def attach(self, options: dict, wait: float, ending: list) -> None:
        """Starts pyust in the process (waiting at most wait seconds for its main thread
        to run Python, or until a signal ends the wait). Raises AttachError."""
        self.attachment = remote.Attachment(self.target, options)
        self.attachment.start(wait, cancelled=lambda: bool(ending), on_wait=lambda: print(
            f"pyust: waiting for process {self.target.pid}'s main thread to run Python (it is "
            "in a system call or C code; Ctrl-C to give up)", file=sys.stderr))
        self.began = time.monotonic()

    def record(self, duration: float | None, ending: list) -> None:
        """Until duration is over, a signal came or the process exited."""
        deadline = self.began + duration if duration else None
        while not ending and (deadline is None or time.monotonic() < deadline):
            if not self.target.is_alive():
                self.exited = True
                break
            time.sleep(0.05)
        self.elapsed = time.monotonic() - self.began

    def stop(self, wait: float) -> None:
        """Stops pyust in the process, then the session. Raises AttachError."""
        self.attachment.detach(wait)
        if self.recorder:
            self.recorder.stop()
        self.session.stop()
        self.stopped = True
        self.discarded = self.session.discarded_events()

    def discard(self, output: str | None) -> None:
        """Destroys the session and removes the --output directory: nothing was recorded."""
        if self.session is not None:
            self.session.destroy()
            self.session = None
        if output:
            shutil.rmtree(output, ignore_errors=True)

    def close(self) -> None:
        """pyust out of the process (when still in), the kernel recorder stopped, the
        session destroyed: a stopped local session is not waited for (its trace is
        complete), a live one is (its relay daemon writes the end)."""
        try:
            if self.attachment is not None:
                self.attachment.close()  # detaches first when still attached
            if self.recorder and not self.stopped:
                self.recorder.stop()
        finally:
            if self.session is not None:
                self.session.destroy(wait=not self.stopped or bool(self.relay))


def _summary(recording: _Recording, fast: bool) -> str:
    """The lines that end a recording: the kernel recorder's note, where the trace is,
    how many events it holds and whether the process lives on."""
    session, target = recording.session, recording.target
    lines = []
    note = recording.recorder.finish(session.path) if recording.recorder else None
    if note:
        lines.append(note)
    path, count = session.path, True
    if recording.relay:
        path, no_count = recording.relay.trace_path(session.name, False)
        count = not no_count
        lost = recording.relay.lost()
        if lost:
            lines.append(lost)
    events, discarded = recording.attachment.events, recording.discarded
    if (events is not None and discarded is not None and not (fast and discarded)
            and not recording.recorder):
        recorded = events - discarded  # the process counted what it handed to LTTng
    else:
        recorded = babeltrace.count_events(path, fast=fast) if count else None
    summary = f"pyust: trace in {path}: "
    if recorded is not None:
        summary += f"{recorded} events recorded"
    elif count:
        summary += "events not counted (babeltrace2 missing or failed)"
    else:
        summary += "events not counted (the relay daemon is on another machine)"
    summary += f", {lttng.discarded_text(discarded)}; attached for {recording.elapsed:.1f} s"
    if recording.exited:
        summary += f"; process {target.pid} exited during the recording (the trace up to " \
                   "then is complete)"
    else:
        summary += f"; detached from process {target.pid}, which runs on untraced"
    lines.append(summary)
    lost = tally.LostStart.of(target.pid, recording.attachment.lost_start or (0, 0))
    if lost:
        lines.append(lost.describe())
    return "\n".join(lines)
