"""`python -m pyust run`: create an LTTng session, trace the program (and its Python
children) into it, stop and destroy the session, and say what the trace holds.

The program runs in a child interpreter, `python -c ... -- PROGRAM` (child_command),
under pyust's hook; pyust run waits for it with its terminating signals blocked and
passes them on (SignalGuard, _run_child), so that the session is always stopped and
destroyed and pyust run ends as the program did (exit_like).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from .. import args as cli_args, children, lttng, sessiond, tally
from .. import START_TIMEOUT_VARIABLE, _runner
from ..args import UsageError
from . import live_options


def main(argv: list) -> int:
    """`python -m pyust run ARGS`: the program's exit status (a program killed by a
    signal kills pyust run with it). Raises UsageError, LttngError."""
    try:
        return _run(argv)
    except Signalled as signalled:
        return exit_like(-signalled.signum)


def _parser() -> argparse.ArgumentParser:
    parser = cli_args.Parser(
        prog=cli_args.program("run"), man="pyust-run",
        description=(
            "Create an LTTng session, record the program's python:* events (with the "
            "vpid and vtid contexts; the processes of the user running pyust only, "
            "never another user's) into it, then stop and destroy the "
            "session and print where the trace is, how many events it holds and how "
            "many LTTng discarded. A session daemon is started if none is running."
        ),
    )
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="trace directory, created private (0700); it must not exist or "
                             "be empty, and not be a symbolic link; it and its parents must be "
                             "yours or root's and writable by nobody else (a parent may be if "
                             "sticky, as /tmp) (default: as lttng names it, "
                             "$LTTNG_HOME/lttng-traces/NAME-DATE-TIME, or "
                             "pyust-PID-DATE-TIME without --name)")
    parser.add_argument("--name", help="session name (default: pyust-PID-DATE-TIME; pyust-PID with --live)")
    cli_args.add_channel_options(parser, lttng.TRACE_FORMATS)
    parser.add_argument("--no-discard", action="store_true",
                        help="make the program wait for buffer space instead of letting "
                             "LTTng discard events (slower, loses nothing)")
    parser.add_argument("--no-count", action="store_true",
                        help="do not count the recorded events at the end (large traces)")
    parser.add_argument("--shm-path", metavar="DIR",
                        help="keep the ring buffers as files in DIR (lttng create --shm-path): "
                             "if the session daemon crashes, `lttng-crash -x OUT DIR` still "
                             "extracts the last events (pyust run prints the command); created "
                             "private (0700) when missing, yours or root's as for --output")
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
    live_options.add(parser)
    parser.add_argument("--native", action="store_true",
                        help="also record the native frames of extensions built with "
                             f"`{cli_args.program('cflags')}` (preloads liblttng-ust-dl and "
                             "liblttng-ust-cyg-profile; a second channel, pyust-native, "
                             "with the ip context that babeltrace2's debug-info needs)")
    parser.add_argument("--kernel", action="store_true",
                        help="also record the program's system calls and scheduling "
                             "(sched_switch): with LTTng's kernel tracer when lttng-modules "
                             "is loaded, else with perf into TRACE/kernel-perf and "
                             "TRACE/kernel-perf-sched (root)")
    cli_args.add_start_timeout(parser, "each traced process (the program, its Python "
                               "children and forks: PYUST_START_TIMEOUT in their environment) "
                               "waits before its first line")
    parser.add_argument("--no-children", action="store_true",
                        help="trace only the program's process (and its forks), not the Python "
                             "programs it starts")
    cli_args.add_hook_options(parser)
    return parser


def _run(argv: list) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    # python's own options before the program (-X dev) go to the program's interpreter.
    python_options, target = _runner.split_python_options(
        cli_args.split_target(args, parser.prog))
    if not target:
        raise UsageError(f"no program after python's options {' '.join(python_options)}")
    _check_options(args)
    knows_formats = lttng.knows_trace_formats()
    trace_format = cli_args.trace_format(args, knows_formats)
    if _is_missing_program(target):
        return 2
    sessiond.check_not_stopped(sessiond.current())  # else every lttng command would wait
    relay = live_options.relay(args)
    # Made last among the checks: a refused command leaves no directory behind.
    output = cli_args.output_directory(args.output) if args.output else None
    shm_path = (cli_args.private_directory(args.shm_path, "--shm-path") if args.shm_path
                else None)
    plan = _Plan(args, relay, output, shm_path, trace_format)
    if args.native:
        from .. import native  # ctypes and sysconfig: only for --native

        native.preload_env(os.environ)  # lttng-ust's helpers are there, or one line

    sessiond.ensure_running()
    daemon = sessiond.current()
    if args.kernel:
        from .. import kernel  # only for --kernel

        plan.recorder = kernel.choose()
    # The processes count their events (pyust.tally), and note a start the session missed.
    # Their counts are used where the trace holds exactly what they handed to LTTng less what
    # it discarded; else the trace is counted (count_events).
    counter = tally.Tally.create()
    counts = not (args.no_count or args.snapshot or args.native or plan.recorder or relay
                  or args.tracefile_count)
    kids = children.prepare(cli_args.hook_flags(args), enabled=not args.no_children,
                            tally=counter and counter.directory)
    session = None
    # From here on a terminating signal ends the run cleanly: before the program
    # starts, pyust run destroys the session and dies of it; while the program
    # runs, the program gets it (see _run_child); after, it waits for the trace.
    guard = SignalGuard()
    stopped = False
    emitted = None
    lost_starts = []
    try:
        session = plan.open_session()
        warning = sessiond.root_daemon_warning(daemon)
        if warning:
            print(warning, file=sys.stderr)
        if relay:
            relay.announce(plan.name)
        try:
            status = _run_child(target, cli_args.hook_flags(args), guard, blocking=args.no_discard,
                                native=args.native, spawn=plan.recorder and plan.recorder.spawn,
                                kids=kids, tally=counter and counter.directory,
                                start_timeout=args.start_timeout,
                                python_options=python_options)
        finally:
            if plan.recorder:
                plan.recorder.stop()
        lines = _daemon_failure(daemon, session, shm_path)
        if lines:  # the session cannot be stopped: say what happened, end as the program
            session = None
            print("\n".join(lines), file=sys.stderr)
            guard.release()
            return exit_like(status)
        session.stop()
        stopped = True
        if args.snapshot:
            session.snapshot_record()
        discarded = lttng.indexed_discarded(session.path) if plan.is_plain else None
        if discarded is None:
            discarded = session.discarded_events()
        emitted = counter.total() if counter and counts else None
        lost_starts = counter.lost_starts() if counter else []
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
                if processes is None:  # --no-children: the program and its forks counted
                    processes = counter.processes()
                counter.remove()
            # A signal that came once the program had ended, while the session was
            # stopped and destroyed, ends pyust run now, by that signal.
            guard.release()
    for line in _summary(args, plan, session, emitted, discarded, processes, lost_starts):
        print(line, file=sys.stderr)
    return exit_like(status)


def _is_missing_program(target: list) -> bool:
    """Whether the program is a script that does not exist, or a -m or -c without its
    value; if so, prints Python's own message for it (whose status is 2), before any
    session."""
    if target[0] in ("-m", "-c") and len(target) == 1:
        print(f"Argument expected for the {target[0]} option", file=sys.stderr)
        return True
    if target[0][:2] in ("-m", "-c") or os.path.exists(target[0]):
        return False
    filename = os.path.join(os.getcwd(), target[0])
    program = (getattr(sys, "orig_argv", None) or [sys.executable])[0]
    print(f"{program}: can't open file {filename!r}: [Errno 2] No such file or directory",
          file=sys.stderr)
    return True


def _check_options(args: argparse.Namespace) -> None:
    """Raises UsageError for options that do not go together."""
    cli_args.check_start_timeout(args)
    if args.tracefile_count is not None and (args.tracefile_count < 1 or not args.tracefile_size):
        raise UsageError("--tracefile-count needs --tracefile-size and must be at least 1")
    if args.snapshot and (args.live or args.relayd):
        raise UsageError("--snapshot and --live cannot go together")
    live_options.check(args)


class _Plan:
    """The session a run records into, as its options ask: where (output: --output, else
    lttng's directory for it, named as lttng names it, but with one date: pyust's own
    session names have it already; None for a relay daemon's session), in what format, with
    which channels; recorder is the kernel's (--kernel) once chosen."""

    def __init__(self, args: argparse.Namespace, relay, output: str | None,
                 shm_path: str | None, trace_format: str | None):
        self.args = args
        self.relay = relay
        stamp = time.strftime('%Y%m%d-%H%M%S')
        # A relay daemon dates the directory of each session itself: pyust-PID alone.
        self.name = args.name or (f"pyust-{os.getpid()}" if relay else
                                  f"pyust-{os.getpid()}-{stamp}")
        if output is None and relay is None:
            output = lttng.default_output(f"{args.name}-{stamp}" if args.name else self.name)
        self.output = output
        self.shm_path = shm_path
        self.trace_format = trace_format
        self.config = lttng.ChannelConfig(subbuf_size=args.subbuf_size,
                                          num_subbuf=args.num_subbuf, blocking=args.no_discard,
                                          overwrite=args.snapshot,
                                          tracefile_size=args.tracefile_size,
                                          tracefile_count=args.tracefile_count)
        self.recorder = None
        # The session is the usual one (create_started): its trace is one user's streams
        # in a local directory, whose indexes say what LTTng discarded.
        self.is_plain = False

    def open_session(self) -> lttng.Session:
        """Creates the session, its channels and the kernel recorder's, and starts it.
        Interrupted while lttng creates it, destroys it if it is ours, and raises on.
        Raises LttngError."""
        args, session = self.args, None
        try:
            if self.output and not (self.relay or self.shm_path or args.snapshot or args.native
                                    or self.recorder):
                # The usual case: no `lttng` process (liblttng-ctl's calls).
                session = lttng.Session.create_started(self.name, self.output, self.config,
                                                       self.trace_format, user=os.getuid())
                if session is not None:
                    self.is_plain = True
                    return session
            if self.relay:
                session = self.relay.create(self.name, self.trace_format)
            else:
                session = lttng.Session.create(self.name, self.output, shm_path=self.shm_path,
                                               snapshot=args.snapshot,
                                               trace_format=self.trace_format)
        except (KeyboardInterrupt, Signalled):
            # Interrupted while lttng created it: the session may exist, not known here.
            _destroy_if_ours(self.name, self.output, generated=args.name is None)
            raise
        try:
            session.set_metadata_timer()
            # The run's own user only: other users' programs whose hooks wake on any
            # session enabling python:* must not write into this trace.
            session.track_user(os.getuid())
            session.enable_python(self.config)
            if args.native:
                from .. import native

                session.enable_native(self.config, native.EVENTS, native.CONTEXTS)
            if self.recorder:
                self.recorder.prepare(session)
            session.start()
        except BaseException:
            session.destroy()
            raise
        return session


def _summary(args: argparse.Namespace, plan: _Plan, session: lttng.Session,
             emitted: int | None, discarded: int, processes, lost_starts: list = ()) -> list:
    """The lines that end a run: the kernel recorder's note, where the trace is, how many
    events it holds and how many LTTng discarded, what to do about a loss, and the processes
    whose start the session missed (pyust.tally.LostStart)."""
    lines = []
    note = plan.recorder.finish(session.path) if plan.recorder else None
    if note:
        lines.append(note)
    no_count = args.no_count
    if plan.relay:
        session.path, no_count = plan.relay.trace_path(plan.name, no_count)
        lost = plan.relay.lost()
        if lost:
            lines.append(lost)
    recorded = None
    if emitted is not None and discarded is not None and not (args.fast and discarded):
        recorded = emitted - discarded
    elif not no_count:
        # (The fast mode's discarded events are batches of records: the trace says how many.)
        from .. import babeltrace  # only to count a trace

        recorded = babeltrace.count_events(session.path, fast=args.fast)
    # One wording whatever the options: only the words of what was not counted change.
    kind = "snapshot (the latest events)" if args.snapshot else "trace"
    if recorded is not None:
        counted = f"{recorded} events recorded"
    elif args.no_count:
        counted = "events not counted (--no-count)"
    elif no_count:
        counted = "events not counted (the relay daemon's trace, read where it runs)"
    else:
        counted = "events not counted (babeltrace2 missing or failed)"
    summary = (f"pyust: {kind} in {session.path}: {counted}, {lttng.discarded_text(discarded)}"
               f"{children.traced(processes)}, {cli_args.user_name(os.getuid())}'s processes "
               "only")
    lines.append(summary)
    if discarded:
        what = "batches of records (fast mode)" if args.fast else "events"
        lines.append(f"pyust: {what} were lost because the buffers filled up: use larger "
                     "buffers (--subbuf-size, --num-subbuf) or --no-discard")
    lines += [start.describe() for start in lost_starts]
    return lines


def _destroy_if_ours(name: str, output: str | None, *, generated: bool) -> None:
    """Destroys session name when this run created it: its name was made by
    pyust run, or its trace goes to this run's new --output directory (a
    session of that name that existed before is someone else's)."""
    path = lttng.session_output(name)
    if path is not None and (generated or (output and path == output)):
        lttng.destroy_session(name)


def _daemon_failure(daemon, session, shm_path: str | None) -> list:
    """The lines to print when the session daemon stopped or died during the run
    (the session cannot be stopped then); empty when it runs."""
    state = daemon.state()
    if state == "running":
        return []
    return sessiond.crash_lines(daemon, state, session.name, session.path, shm_path)


def _run_child(target: list, hook_flags: list, guard: "SignalGuard", *, blocking: bool,
               native: bool = False, spawn=None, kids=None, tally: str | None = None,
               start_timeout: float = 0, python_options: list = ()) -> int:
    """Run the program in a child interpreter under the hook; its status.

    The terminating signals sent to pyust run while the program runs go to
    the program, which ends (or not) as it would untraced; pyust run waits
    for it, so that the session is always stopped and destroyed. Those the
    terminal sends to its whole foreground group (Ctrl-C, Ctrl-\\, hang-up)
    have reached the program already and are not sent twice. With `kids`,
    the program's Python children are traced too (children.py). With `tally`,
    the program counts its events there (pyust.tally). start_timeout: how long each
    traced process waits for the session before its first line (pyust._start_timeout).
    python_options: python's own, for the program's interpreter (-X dev)."""
    env = dict(os.environ)
    env[START_TIMEOUT_VARIABLE] = f"{start_timeout:g}"
    if blocking:
        env["LTTNG_UST_ALLOW_BLOCKING"] = "1"
    if native:
        from .. import native

        env = native.preload_env(env)
    if kids is not None:
        env = kids.environ(env)
    command = child_command(hook_flags, target, tally, python_options)
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


class Signalled(BaseException):
    """A terminating signal came to pyust run before the program started:
    pyust run cleans up, then dies of it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class SignalGuard:
    """pyust run's terminating signals, from the session's creation to its
    destruction (see _run and _run_child)."""

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
        raise Signalled(signum)

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


def child_command(hook_flags: list, target: list, tally: str | None = None,
                  python_options: list = ()) -> list:
    """The command of the child interpreter: `python [python_options] -m pyust [hook
    options] -- PROGRAM`, but started with -c: -m would import runpy and its 18 modules
    into the program before its first line (pyust.__main__ hands it to pyust._runner,
    which then makes sys.argv, sys.orig_argv, sys.path[0] and __main__ what `python
    PROGRAM` makes them). tally: the directory where it counts its events."""
    code = _CHILD_CODE % (f", tally={tally!r}" if tally else "")
    return [sys.executable, *python_options, "-c", code, *hook_flags, "--", *target]


_CHILD_CODE = "import sys; from pyust.__main__ import main; sys.exit(main(sys.argv[1:]%s))"


def exit_like(status: int) -> int:
    """The child's exit status as ours: a child killed by a signal kills us
    with the same signal, so a shell sees what it would see untraced. Returns
    only when the signal cannot kill us (128 + the signal, the shell's value)."""
    if status >= 0:
        return status
    signum = -status
    sys.stdout.flush()
    sys.stderr.flush()
    die_of(signum)
    return 128 + signum


def die_of(signum: int) -> None:
    """Ends this process killed by signum, as the shell reports a program killed
    by it (SIGKILL of an out-of-memory kill, SIGSEGV, a real-time signal: any
    whose default action ends a process), without a core dump of pyust's own: a
    core file or crash report of pyust's interpreter would say nothing about the
    program, and could replace the program's own core file. Returns when signum
    does not end a process by default."""
    _not_dumpable()
    try:
        signal.signal(signum, signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # SIGKILL and SIGSTOP: at their default always
    # A signal blocked when pyust run started (its mask is inherited) would wait.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)


def _not_dumpable() -> None:
    """The kernel dumps no core of this process from now on, whether core_pattern
    is a file (RLIMIT_CORE) or a program such as systemd-coredump or apport, which
    the kernel does not start for a process that is not dumpable."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (OSError, ValueError):
        pass
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_PR_SET_DUMPABLE = 4  # <linux/prctl.h>
