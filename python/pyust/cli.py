"""The `python -m pyust` command line.

    python -m pyust [--c-calls] [--lines] [--fast] -- app.py args     hook only
    python -m pyust run [options] -- app.py args             session + hook
    python -m pyust attach [options] PID                     a running process
    python -m pyust enable [VAR] / disable                   .pth activation

User mistakes print one line `pyust: error: ...` and exit 2 (usage) or 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

from . import _runner, children, live, lttng, pth, sessiond, tally


_TOP_EPILOG = """\
commands:
  run       create an LTTng session, trace the program into it, print a summary
  attach    trace a Python process that is already running (pyust attach PID)
  report    profiles, call trees, flame graphs of a trace (through babeltrace2)
  top       the hottest functions of a live session, refreshed every second
  enable    trace every interpreter of this environment when a variable is set
  disable   undo enable
  cflags    compiler flags that instrument an extension for run --native

Without a command, pyust only installs its hook and runs the program: record
it with a session of your own:
  lttng create s && lttng enable-event -u 'python:*'
  lttng add-context -u -t vpid -t vtid && lttng start
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
    """The hook mode, parsed by argparse: reached only when pyust._runner's
    own parser declines (--help, abbreviations, mistakes)."""
    parser = _Parser(
        prog="python -m pyust",
        description="Trace a Python program into LTTng (provider `python`).",
        epilog=_TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_hook_options(parser)
    args = parser.parse_args(argv)
    target_argv = _split_target(args, parser.prog)
    options = {"modules": args.modules or [], "exclude": args.exclude or [],
               "c_calls": args.c_calls, "lines": args.lines, "fast": args.fast,
               "no_dormant": args.no_dormant}
    return _runner.run_hook(options, target_argv)


# ----------------------------------------------------------------------- run

def _run_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m pyust run",
        description=(
            "Create an LTTng session, record the program's python:* events (with the "
            "vpid and vtid contexts) into it, then stop and destroy the "
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
    parser.add_argument("--trace-format", choices=sorted(lttng.TRACE_FORMATS),
                        help="the CTF version of the trace (LTTng 2.15 or later; default: what "
                             "`lttng create` writes there, CTF 2; earlier LTTng writes CTF 1.8 "
                             "only). Trace Compass reads CTF 1.8")
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
    trace_format = args.trace_format
    knows_formats = lttng.knows_trace_formats()
    if not knows_formats and trace_format == "ctf-2":
        raise UsageError("--trace-format ctf-2: this LTTng writes CTF 1.8 only (LTTng 2.15 or "
                         "later writes CTF 2)")
    if not knows_formats:
        trace_format = None  # CTF 1.8, the only format it writes
    if target[0] != "-m" and not os.path.exists(target[0]):
        # Python's own message and status for a missing script, before any session.
        filename = os.path.join(os.getcwd(), target[0])
        program = (getattr(sys, "orig_argv", None) or [sys.executable])[0]
        print(f"{program}: can't open file {filename!r}: [Errno 2] No such file or directory",
              file=sys.stderr)
        return 2
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

    # A daemon whose pid file names a running process answers: no `lttng list`
    # to find out (20 ms and more).
    if sessiond.current().state() != "running" and not lttng.sessiond_is_running():
        lttng.start_sessiond()
        print("pyust: no session daemon was running: started one (lttng-sessiond --daemonize)",
              file=sys.stderr)
    daemon = sessiond.current()

    recorder = None
    if args.kernel:
        from . import kernel

        recorder = kernel.choose()
    # The processes count their events (pyust.tally) where the trace holds exactly what they
    # handed to LTTng less what it discarded; else the trace is counted (count_events).
    counter = None
    if not (args.no_count or args.snapshot or args.native or recorder or relay
            or args.tracefile_count):
        counter = tally.Tally.create()
    kids = children.prepare(_hook_flags(args), enabled=not args.no_children,
                            tally=counter and counter.directory)
    session = None
    status = None
    # From here on a terminating signal ends the run cleanly: before the program
    # starts, pyust run destroys the session and dies of it; while the program
    # runs, the program gets it (see _run_child); after, it waits for the trace.
    guard = _SignalGuard()
    stopped = False
    emitted = None
    try:
        started = False
        try:
            if output and not (relay or shm_path or args.snapshot or args.native or recorder
                               or (knows_formats and not trace_format)):
                # The usual case: one `lttng load` (and the metadata timer, the start).
                session = lttng.Session.create_started(name, output, config, trace_format)
                started = session is not None
            if session is None:
                session = relay.create(name, trace_format) if relay else lttng.Session.create(
                    name, output, shm_path=shm_path, snapshot=args.snapshot,
                    trace_format=trace_format)
        except (KeyboardInterrupt, _Signalled):
            # Interrupted while lttng created it: the session may exist, not known here.
            _destroy_if_ours(name, output, generated=args.name is None)
            raise
        if not started:
            session.set_metadata_timer()
            session.enable_python(config)
            if args.native:
                session.enable_native(config)
            if recorder:
                recorder.prepare(session)
            session.start()
        warning = sessiond.root_daemon_warning(daemon)
        if warning:
            print(warning, file=sys.stderr)
        if relay:
            relay.announce(name)
        try:
            status = _run_child(target, _hook_flags(args), guard, blocking=args.no_discard,
                                native=args.native, spawn=recorder and recorder.spawn,
                                kids=kids, tally=counter and counter.directory)
        finally:
            if recorder:
                recorder.stop()
        lines = _daemon_failure(daemon, session, shm_path)
        if lines:  # the session cannot be stopped: say what happened, end as the program
            session = None
            print("\n".join(lines), file=sys.stderr)
            guard.release()
            return _exit_like(status)
        session.stop()
        stopped = True
        if args.snapshot:
            session.snapshot_record()
        discarded = session.discarded_events()
        emitted = counter.total() if counter else None
    finally:
        try:
            if session is not None:
                # Once stopped, the trace is complete on disk: the daemon need not be
                # waited for while it tears the session down (0.5 s). A live session's
                # relay daemon is waited for.
                session.destroy(wait=not stopped or bool(relay))
        finally:
            processes = children.finish(kids)
            if counter:
                counter.remove()
            # A signal that came once the program had ended, while the session was
            # stopped and destroyed, ends pyust run now, by that signal.
            guard.release()

    kernel_note = recorder.finish(session.path) if recorder else None
    if kernel_note:
        print(kernel_note, file=sys.stderr)
    if relay:
        session.path, args.no_count = relay.trace_path(name, args.no_count)
    recorded = None
    if emitted is not None and not (args.fast and discarded):
        recorded = emitted - discarded
    elif not args.no_count:
        # (The fast mode's discarded events are batches of records: the trace says how many.)
        recorded = _count_trace(session.path, args.fast)
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


def _count_trace(path: str, fast: bool) -> int | None:
    """The events of the trace in path, read with babeltrace2 (the fast mode's
    records through pyust's filter.pyust.expand)."""
    expand = None
    if fast:
        from .report import ReportError, plugin_dirs
        try:
            expand = plugin_dirs()
        except ReportError:
            expand = []
    return lttng.count_events(path, plugin_path=expand)


def _destroy_if_ours(name: str, output: str | None, *, generated: bool) -> None:
    """Destroys session name when this run created it: its name was made by
    pyust run, or its trace goes to this run's new --output directory (a
    session of that name that existed before is someone else's)."""
    path = lttng.session_output(name)
    if path is not None and (generated or (output and path == output)):
        lttng.destroy_session(name)


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


def _run_child(target: list, hook_flags: list, guard: "_SignalGuard", *, blocking: bool,
               native: bool = False, spawn=None, kids=None, tally: str | None = None) -> int:
    """Run the program in a child interpreter under the hook; its status.

    The terminating signals sent to pyust run while the program runs go to
    the program, which ends (or not) as it would untraced; pyust run waits
    for it, so that the session is always stopped and destroyed. Those the
    terminal sends to its whole foreground group (Ctrl-C, Ctrl-\\, hang-up)
    have reached the program already and are not sent twice. With `kids`,
    the program's Python children are traced too (children.py). With `tally`,
    the program counts its events there (pyust.tally)."""
    env = dict(os.environ)
    if blocking:
        env["LTTNG_UST_ALLOW_BLOCKING"] = "1"
    if native:
        from . import native as native_frames

        env = native_frames.preload_env(env)
    if kids is not None:
        env = kids.environ(env)
    command = child_command(hook_flags, target, tally)
    # The child gets every signal's disposition and mask as pyust run got them:
    # the guard's handlers are reset by exec, and the signals are blocked only
    # once it runs (one that comes during the spawn is kept and passed on).
    guard.spawning = True
    try:
        child = spawn(command, env) if spawn else subprocess.Popen(command, env=env)
    finally:
        guard.block()
        guard.spawning = False
    for signum in guard.take_early():
        _pass_on(child, signum)
    while True:
        status = child.poll()
        if status is not None:
            return status
        info = signal.sigtimedwait(guard.waited, 1.0)
        if info is None or info.si_signo == signal.SIGCHLD:
            continue
        if info.si_code == _SI_KERNEL:
            # The terminal's signals (and those of pyust run's own limits) come from
            # the kernel: the terminal's reached the program's process group too.
            continue
        _pass_on(child, info.si_signo)


def _pass_on(child, signum: int) -> None:
    try:
        child.send_signal(signum)
    except ProcessLookupError:
        pass


# siginfo's si_code of a signal the kernel sent (a terminal's, a resource
# limit's), as opposed to kill(2) or sigqueue(3) by a process.
_SI_KERNEL = 0x80

# The signals that end a process by default and that one sends to end it.
# Not the faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS, SIGTRAP): those
# would be pyust run's own crash.
_TERMINATING = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGUSR1", "SIGUSR2", "SIGPIPE",
                "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF",
                "SIGIO", "SIGPWR")


class _Signalled(BaseException):
    """A terminating signal came to pyust run before the program started:
    pyust run cleans up, then dies of it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _SignalGuard:
    """pyust run's terminating signals, from the session's creation to its
    destruction (see _run_main and _run_child)."""

    def __init__(self):
        signums = [getattr(signal, name) for name in _TERMINATING if hasattr(signal, name)]
        signums += range(signal.SIGRTMIN, signal.SIGRTMAX + 1)
        # A signal ignored when pyust run started (nohup's SIGHUP, a background
        # job's SIGINT) stays so, and the program inherits that. Python ignores
        # SIGPIPE and SIGXFSZ itself (the program gets them back at its default):
        # sent to pyust run with kill, they are passed on too.
        python_ignores = {signal.SIGPIPE, signal.SIGXFSZ}
        self.signals = [signum for signum in signums
                        if signal.getsignal(signum) is not signal.SIG_IGN
                        or signum in python_ignores]
        self.waited = set(self.signals) | {signal.SIGCHLD}
        self.spawning = False
        self._early = []
        self._blocked = False
        self._previous = {}
        for signum in self.signals:
            if signum in python_ignores:
                continue
            try:
                self._previous[signum] = signal.signal(signum, self._handle)
            except (OSError, ValueError):  # one the platform does not let us catch
                pass

    def _handle(self, signum, frame):
        if self.spawning:
            self._early.append(signum)
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise _Signalled(signum)

    def take_early(self) -> list:
        early, self._early = self._early, []
        return early

    def block(self) -> None:
        """From now until release(), the signals wait for _run_child's sigtimedwait."""
        signal.pthread_sigmask(signal.SIG_BLOCK, self.waited)
        self._blocked = True

    def release(self) -> None:
        """The previous handlers back, the signals unblocked: one that came
        meanwhile and was not passed on acts now."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        if self._blocked:
            self._blocked = False
            signal.pthread_sigmask(signal.SIG_UNBLOCK, self.waited)


def child_command(hook_flags: list, target: list, tally: str | None = None) -> list:
    """The command of the child interpreter: `python -m pyust [hook options] --
    PROGRAM`, but started with -c: -m would import runpy and its 18 modules
    into the program before its first line (pyust._runner then makes
    sys.argv, sys.orig_argv, sys.path[0] and __main__ what `python PROGRAM`
    makes them). tally: the directory where it counts its events."""
    code = _CHILD_CODE % (f", tally={tally!r}" if tally else "")
    return [sys.executable, "-c", code, *hook_flags, "--", *target]


_CHILD_CODE = "import sys; from pyust._runner import main; sys.exit(main(sys.argv[1:]%s))"


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


# -------------------------------------------------------------------- attach

def _attach_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    parser.add_argument("--subbuf-size", default="1M", metavar="SIZE",
                        help="sub-buffer size of the channel, per CPU (default: 1M)")
    parser.add_argument("--num-subbuf", type=int, default=8, metavar="N",
                        help="sub-buffers per CPU (default: 8)")
    parser.add_argument("--trace-format", choices=sorted(lttng.TRACE_FORMATS),
                        help="the CTF version of the trace (as for run)")
    parser.add_argument("--modules", action="append", metavar="PREFIXES",
                        help="trace only these modules (as for run)")
    parser.add_argument("--exclude", action="append", metavar="PREFIXES",
                        help="do not trace these modules (as for run)")
    parser.add_argument("--c-calls", action="store_true",
                        help="also trace calls of C functions (python:c_call/c_return)")
    parser.add_argument("--lines", action="store_true", help="also trace every line run")
    parser.add_argument("--fast", action="store_true",
                        help="fast mode: per-thread batches of compact records (as for run)")
    parser.add_argument("--kernel", action="store_true",
                        help="also record the process's system calls and scheduling from the "
                             "attach on (as for run: LTTng's kernel tracer, else perf; root)")
    parser.add_argument("--native", action="store_true",
                        help="refused: native frames need lttng-ust's cyg-profile library "
                             "preloaded when the program starts (use pyust run --native)")
    return parser


def _attach_main(argv: list) -> int:
    from . import remote

    parser = _attach_parser()
    args = parser.parse_args(argv)
    if args.native:
        raise UsageError("--native cannot attach: native frames need liblttng-ust-cyg-profile "
                         "preloaded when the program starts (use pyust run --native)")
    if args.num_subbuf < 2:
        raise UsageError("--num-subbuf must be at least 2")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be more than 0 seconds")
    if args.wait <= 0:
        raise UsageError("--wait must be more than 0 seconds")
    trace_format = args.trace_format
    if not lttng.knows_trace_formats():
        if trace_format == "ctf-2":
            raise UsageError("--trace-format ctf-2: this LTTng writes CTF 1.8 only (LTTng 2.15 "
                             "or later writes CTF 2)")
        trace_format = None
    try:
        target = remote.inspect(args.pid)
    except remote.AttachError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    sessiond.check_not_stopped(sessiond.current())
    output = _check_output_dir(args.output) if args.output else None
    name = args.name or f"pyust-attach-{args.pid}-{time.strftime('%Y%m%d-%H%M%S')}"
    config = lttng.ChannelConfig(subbuf_size=args.subbuf_size, num_subbuf=args.num_subbuf)
    if sessiond.current().state() != "running" and not lttng.sessiond_is_running():
        lttng.start_sessiond()
        print("pyust: no session daemon was running: started one (lttng-sessiond --daemonize)",
              file=sys.stderr)
    options = {"modules": args.modules or [], "exclude": args.exclude or [],
               "c_calls": args.c_calls, "lines": args.lines, "fast": args.fast}
    ending = []  # the signal that ends the recording, if one did
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, lambda signum, frame: ending.append(signum))
                for signum in handled}
    recorder = None
    if args.kernel:
        from . import kernel

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
        recorded = _count_trace(session.path, args.fast)
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
    commands = {"run": _run_main, "attach": _attach_main, "enable": _enable_main,
                "disable": _disable_main,
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
    except _Signalled as signalled:
        return _exit_like(-signalled.signum)


def _stop_activation_tracing() -> None:
    """pyust's own commands are never traced, even when the .pth says so."""
    from . import _activate

    if _activate.started_by_activation:
        import pyust

        pyust.stop()
