"""The `python -m pyust` command line.

    python -m pyust [--c-calls] [--lines] [--fast] -- app.py args     hook only
    python -m pyust run [options] -- app.py args             session + hook
    python -m pyust enable [VAR] / disable                   .pth activation

User mistakes print one line `pyust: error: ...` and exit 2 (usage) or 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from . import children, live, lttng, pth, sessiond

SUBCOMMANDS = ("run", "report", "top", "enable", "disable", "cflags")

_TOP_EPILOG = """\
commands:
  run       create an LTTng session, trace the program into it, print a summary
  report    profiles, call trees, flame graphs of a trace (through babeltrace2)
  top       the hottest functions of a live session, refreshed every second
  enable    trace every interpreter of this environment when a variable is set
  disable   undo enable
  cflags    compiler flags that instrument an extension for run --native

Without a command, pyust only installs its hook and runs the program: record
it with a session of your own:
  lttng create s && lttng enable-event -u 'python:*'
  lttng add-context -u -t vpid -t vtid -t procname && lttng start
  python -m pyust -- app.py
  lttng stop && lttng destroy

Run `python -m pyust COMMAND --help` for a command's options.
"""


class UsageError(Exception):
    """A mistake on the command line; exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage dump
        raise UsageError(f"{message} (see {self.prog} --help)")


def _add_hook_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--modules", action="append", metavar="PREFIXES",
                        help="trace only these modules: comma-separated module-name prefixes "
                             "(numpy matches numpy.core, not numpyro; __main__ is the script); "
                             "repeatable; default: every module")
    parser.add_argument("--exclude", action="append", metavar="PREFIXES",
                        help="do not trace these modules (prefixes as for --modules; the most "
                             "specific prefix of either list decides)")
    parser.add_argument("--c-calls", action="store_true",
                        help="also trace calls of C functions (python:c_call/c_return)")
    parser.add_argument("--lines", action="store_true",
                        help="also trace every line run (python:line)")
    parser.add_argument("--fast", action="store_true",
                        help="fast mode: record calls, returns and lines in per-thread batches "
                             "(python:batch), about half the cost of the standard mode's one "
                             "event each; read the trace with pyust report, or babeltrace2 with "
                             "-c filter.pyust.expand")
    parser.add_argument("--no-dormant", action="store_true",
                        help="keep the interpreter hooks installed while no session records "
                             "(by default they are removed then, and come back within 100 ms "
                             "of a session starting to record python:*)")
    parser.add_argument("target", nargs=argparse.REMAINDER,
                        help="the program: script.py args, or -m module args (after --)")


def _split_target(args: argparse.Namespace, prog: str) -> list:
    target = list(args.target)
    if target and target[0] == "--":
        target = target[1:]
    if not target:
        raise UsageError(f"no program to run: {prog} -- script.py [args] or -- -m module [args]")
    return target


def _hook_flags(args: argparse.Namespace) -> list:
    flags = (["--c-calls"] if args.c_calls else []) + (["--lines"] if args.lines else [])
    flags += ["--no-dormant"] if args.no_dormant else []
    flags += ["--fast"] if args.fast else []
    for option in ("modules", "exclude"):
        for value in getattr(args, option) or []:
            flags += [f"--{option}", value]
    return flags


# ----------------------------------------------------------------- hook only

def _hook_main(argv: list) -> int:
    parser = _Parser(
        prog="python -m pyust",
        description="Trace a Python program into LTTng (provider `python`).",
        epilog=_TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_hook_options(parser)
    args = parser.parse_args(argv)
    target_argv = _split_target(args, parser.prog)

    import pyust
    from . import _activate, _runner

    try:
        target = _runner.prepare(target_argv)
    except _runner.TargetError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    if _activate.started_by_activation:
        pyust.stop()  # this command's options win over the environment's

    def start():
        pyust.start(modules=args.modules, exclude=args.exclude, c_calls=args.c_calls,
                    lines=args.lines, dormant=not args.no_dormant, fast=args.fast,
                    _hide_caller_stack=True)

    try:
        _runner.run(target, start)
    except pyust.TracerError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    return 0


# ----------------------------------------------------------------------- run

def _run_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m pyust run",
        description=(
            "Create an LTTng session, record the program's python:* events (with the "
            "vpid, vtid and procname contexts) into it, then stop and destroy the "
            "session and print where the trace is, how many events it holds and how "
            "many LTTng discarded. A session daemon is started if none is running."
        ),
    )
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="trace directory, created private (0700); it must not exist or "
                             "be empty, and not be a symbolic link (default: lttng's, "
                             "$LTTNG_HOME/lttng-traces/NAME-DATE-TIME)")
    parser.add_argument("--name", help="session name (default: pyust-PID-TIME)")
    parser.add_argument("--subbuf-size", default="1M", metavar="SIZE",
                        help="sub-buffer size of the channel, per CPU (default: 1M)")
    parser.add_argument("--num-subbuf", type=int, default=8, metavar="N",
                        help="sub-buffers per CPU (default: 8)")
    parser.add_argument("--no-discard", action="store_true",
                        help="make the program wait for buffer space instead of letting "
                             "LTTng discard events (slower, loses nothing)")
    parser.add_argument("--no-count", action="store_true",
                        help="do not count the recorded events at the end (large traces)")
    parser.add_argument("--shm-path", metavar="DIR",
                        help="keep the ring buffers as files in DIR (lttng create --shm-path): "
                             "if the session daemon crashes, `lttng-crash -x OUT DIR` still "
                             "extracts the last events (pyust run prints the command)")
    parser.add_argument("--snapshot", action="store_true",
                        help="flight recorder: keep only the latest events in the buffers "
                             "(--subbuf-size x --num-subbuf per CPU, overwriting the oldest) and "
                             "write them as a snapshot when the program ends (`lttng snapshot "
                             "record -s NAME` takes more while it runs)")
    parser.add_argument("--tracefile-size", metavar="SIZE",
                        help="rotate each stream file at SIZE (at least --subbuf-size)")
    parser.add_argument("--tracefile-count", type=int, metavar="N",
                        help="with --tracefile-size: keep only the last N files of each stream "
                             "(the oldest events are deleted)")
    live.add_options(parser)
    parser.add_argument("--native", action="store_true",
                        help="also record the native frames of extensions built with "
                             "`python -m pyust cflags` (preloads liblttng-ust-dl and "
                             "liblttng-ust-cyg-profile; a second channel, pyust-native, "
                             "with the ip context that babeltrace2's debug-info needs)")
    parser.add_argument("--kernel", action="store_true",
                        help="also record the program's system calls and scheduling "
                             "(sched_switch): with LTTng's kernel tracer when lttng-modules "
                             "is loaded, else with perf into TRACE/kernel-perf and "
                             "TRACE/kernel-perf-sched (root)")
    parser.add_argument("--no-children", action="store_true",
                        help="trace only the program's process (and its forks), not the Python "
                             "programs it starts")
    _add_hook_options(parser)
    return parser


def _check_output_dir(path: str) -> str:
    """The trace directory, made private (0700) here unless it exists empty.
    A symbolic link is refused: nobody can steer the trace elsewhere."""
    path = os.path.abspath(path)
    if os.path.islink(path):
        raise UsageError(f"--output {path} is a symbolic link: give the directory itself")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.mkdir(path, 0o700)
        return path
    except FileExistsError:
        pass
    except OSError as error:
        raise UsageError(f"--output {path}: cannot create it: {error.strerror}") from None
    if not os.path.isdir(path) or os.path.islink(path):
        raise UsageError(f"--output {path} exists and is not a directory")
    if os.listdir(path):
        raise UsageError(f"--output {path} is not empty: choose another directory "
                         "or remove this one")
    return path


def _run_main(argv: list) -> int:
    parser = _run_parser()
    args = parser.parse_args(argv)
    target = _split_target(args, parser.prog)
    if args.num_subbuf < 2:
        raise UsageError("--num-subbuf must be at least 2")
    if args.tracefile_count is not None and (args.tracefile_count < 1 or not args.tracefile_size):
        raise UsageError("--tracefile-count needs --tracefile-size and must be at least 1")
    if args.snapshot and (args.live or args.relayd):
        raise UsageError("--snapshot and --live cannot go together")
    if target[0] != "-m" and not os.path.exists(target[0]):
        print(f"pyust: error: can't open file {target[0]!r}: no such file", file=sys.stderr)
        return 1
    sessiond.check_not_stopped(sessiond.current())  # else every lttng command would wait
    relay = live.prepare(args, args.output) if args.live or args.relayd else None
    # Made last among the checks: a refused command leaves no directory behind.
    output = _check_output_dir(args.output) if args.output else None
    name = args.name or f"pyust-{os.getpid()}-{time.strftime('%Y%m%d-%H%M%S')}"
    config = lttng.ChannelConfig(subbuf_size=args.subbuf_size, num_subbuf=args.num_subbuf,
                                 blocking=args.no_discard, overwrite=args.snapshot,
                                 tracefile_size=args.tracefile_size,
                                 tracefile_count=args.tracefile_count)
    shm_path = _check_shm_path(args.shm_path) if args.shm_path else None
    if args.native:
        from . import native as native_frames

        native_frames.preload_env(os.environ)  # lttng-ust's helpers are there, or one line

    if not lttng.sessiond_is_running():
        lttng.start_sessiond()
        print("pyust: no session daemon was running: started one (lttng-sessiond --daemonize)",
              file=sys.stderr)
    daemon = sessiond.current()

    recorder = None
    if args.kernel:
        from . import kernel

        recorder = kernel.choose()
    kids = children.prepare(_hook_flags(args), enabled=not args.no_children)
    session = None
    status = None
    try:
        session = relay.create(name) if relay else lttng.Session.create(
            name, output, shm_path=shm_path, snapshot=args.snapshot)
        warning = sessiond.root_daemon_warning(daemon)
        if warning:
            print(warning, file=sys.stderr)
        session.enable_python(config)
        if args.native:
            session.enable_native(config)
        if recorder:
            recorder.prepare(session)
        session.start()
        if relay:
            relay.announce(name)
        try:
            status = _run_child(target, _hook_flags(args), blocking=args.no_discard,
                                native=args.native, spawn=recorder and recorder.spawn,
                                kids=kids)
        finally:
            if recorder:
                recorder.stop()
        lines = _daemon_failure(daemon, session, shm_path)
        if lines:  # the session cannot be stopped: say what happened, end as the program
            session = None
            print("\n".join(lines), file=sys.stderr)
            return _exit_like(status)
        session.stop()
        if args.snapshot:
            session.snapshot_record()
        discarded = session.discarded_events()
    finally:
        if session is not None:
            session.destroy()
        processes = children.finish(kids)

    kernel_note = recorder.finish(session.path) if recorder else None
    if kernel_note:
        print(kernel_note, file=sys.stderr)
    if relay:
        session.path, args.no_count = relay.trace_path(name, args.no_count)
    expand = None
    if args.fast:
        from .report import ReportError, plugin_dirs
        try:
            expand = plugin_dirs()
        except ReportError:
            expand = []
    recorded = None if args.no_count else lttng.count_events(session.path, plugin_path=expand)
    summary = f"pyust: {'snapshot (the latest events)' if args.snapshot else 'trace'} in {session.path}"
    if recorded is not None:
        summary += f": {recorded} events recorded"
    elif not args.no_count:
        summary += ": events not counted (babeltrace2 missing or failed)"
    summary += f", {discarded} discarded by LTTng"
    summary += children.traced(processes)
    print(summary, file=sys.stderr)
    if discarded:
        what = "batches of records (fast mode)" if args.fast else "events"
        print(f"pyust: {what} were lost because the buffers filled up: use larger buffers "
              "(--subbuf-size, --num-subbuf) or --no-discard", file=sys.stderr)
    return _exit_like(status)


def _check_shm_path(path: str) -> str:
    """The --shm-path directory, created private (0700) when missing; never a
    symbolic link (the buffers of the session are files there)."""
    path = os.path.abspath(path)
    if os.path.islink(path):
        raise UsageError(f"--shm-path {path} is a symbolic link: give the directory itself")
    try:
        os.makedirs(path, 0o700, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--shm-path {path}: cannot create it: {error.strerror}") from None
    if not os.path.isdir(path):
        raise UsageError(f"--shm-path {path} exists and is not a directory")
    return path


def _daemon_failure(daemon, session, shm_path: str | None) -> list:
    """The lines to print when the session daemon stopped or died during the run
    (the session cannot be stopped then); empty when it runs."""
    state = daemon.state()
    if state == "running":
        return []
    return sessiond.crash_lines(daemon, state, session.name, session.path, shm_path)


def _run_child(target: list, hook_flags: list, *, blocking: bool, native: bool = False,
               spawn=None, kids=None) -> int:
    """Run the program in a child interpreter under the hook; its status."""
    env = dict(os.environ)
    if blocking:
        env["LTTNG_UST_ALLOW_BLOCKING"] = "1"
    if native:
        from . import native as native_frames

        env = native_frames.preload_env(env)
    if kids is not None:
        env = kids.environ(env)  # Python children trace too (children.py)
    command = [sys.executable, "-m", "pyust", *hook_flags, "--", *target]
    # The terminal's Ctrl-C reaches the child (same process group); the
    # parent waits for it so that the session is always stopped and destroyed.
    # (Ignored only after the spawn: the child would inherit SIG_IGN.)
    child = spawn(command, env) if spawn else subprocess.Popen(command, env=env)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}

    def forward(signum, frame):
        child.send_signal(signum)

    previous_term = signal.signal(signal.SIGTERM, forward)
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _exit_like(status: int) -> int:
    """The child's exit status as ours: a child killed by a signal kills us
    with the same signal, so a shell sees what it would see untraced."""
    if status >= 0:
        return status
    signum = -status
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum


# ------------------------------------------------------------ enable/disable

def _enable_main(argv: list) -> int:
    parser = _Parser(
        prog="python -m pyust enable",
        description=(
            "Write a .pth file into this interpreter's site-packages so that every "
            "Python of this environment starts tracing when VAR is set (to 1, or to "
            "hook options such as '--lines --c-calls'). Inert under python -E and -I, "
            "and in setuid/setgid processes."
        ),
    )
    parser.add_argument("variable", nargs="?", default=pth.DEFAULT_VARIABLE, metavar="VAR",
                        help=f"the environment variable that turns tracing on "
                             f"(default: {pth.DEFAULT_VARIABLE})")
    args = parser.parse_args(argv)
    path = pth.enable(args.variable)
    print(f"pyust: wrote {path}: interpreters of this environment trace when "
          f"{args.variable}=1 (or hook options) is set")
    return 0


def _disable_main(argv: list) -> int:
    parser = _Parser(prog="python -m pyust disable",
                     description="Remove the .pth file that `pyust enable` wrote.")
    parser.parse_args(argv)
    path = pth.disable()
    print(f"pyust: removed {path}" if path else "pyust: was not enabled (no .pth file)")
    return 0


# ---------------------------------------------------------------------- main

def main(argv: list | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = {"run": _run_main, "enable": _enable_main, "disable": _disable_main,
                "cflags": lambda args: __import__("pyust.native", fromlist=["main"]).cflags_main(args),
                "report": lambda args: __import__("pyust.report", fromlist=["main"]).main(args),
                "top": lambda args: __import__("pyust.top", fromlist=["main"]).main(args)}
    if not argv or argv[0] not in commands:
        # The program's own exceptions (KeyboardInterrupt included) propagate
        # exactly as they would untraced.
        try:
            return _hook_main(argv)
        except UsageError as error:
            print(f"pyust: error: {error}", file=sys.stderr)
            return 2
    _stop_activation_tracing()
    try:
        return commands[argv[0]](argv[1:])
    except UsageError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 2
    except (lttng.LttngError, pth.PthError) as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pyust: interrupted", file=sys.stderr)
        return 130


def _stop_activation_tracing() -> None:
    """pyust's own commands are never traced, even when the .pth says so."""
    from . import _activate

    if _activate.started_by_activation:
        import pyust

        pyust.stop()
