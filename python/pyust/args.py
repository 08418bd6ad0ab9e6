"""Command-line support shared by pyust's commands: the one-line usage error, the parser
that raises it, the hook options, the directories pyust writes into (checked so that no
other user can steer the writes), and the types of option values (durations, times on
a trace's clock, ids, counts, sizes, shares, seconds, module prefixes).

A leaf of the package: it imports nothing of pyust's. Every mistake raises UsageError
(cli.main prints it as one line `pyust: error: ...`, exit status 2) or, inside an
argparse type, argparse.ArgumentTypeError (which Parser turns into a UsageError).
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import sys


class UsageError(Exception):
    """A mistake on the command line; exit status 2."""


def program(command: str = "") -> str:
    """pyust's name as the user ran it, for usage lines and messages, followed by command:
    the command's own name (`pyust`, `pyust-3.13`: sys.argv[0] names the installed script),
    else `python -m pyust`."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    if not re.fullmatch(r"pyust(-\d+\.\d+)?", name):
        name = "python -m pyust"
    return f"{name} {command}" if command else name


class Parser(argparse.ArgumentParser):
    """argparse's parser, failing with one UsageError line instead of its usage dump. With
    man="pyust-run", its help ends by naming that manual page, which holds the reference."""

    def __init__(self, *args, man: str | None = None, **kwargs):
        if man:
            epilog = kwargs.get("epilog")
            kwargs["epilog"] = ((epilog + "\n\n") if epilog else "") + \
                f"Manual page: {man}(1) (man {man})."
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")

    def _get_validation_formatter(self):
        # CPython 3.14's argparse checks each option's help with a formatter (this method)
        # that sets up its colours first, importing _colorize and dataclasses: 16 ms of
        # every `pyust run`, though the checks (_expand_help, _format_args) read no colour.
        # 3.15 sets colours up lazily (_get_theme_and_decolor): nothing to spare there.
        base = self.formatter_class
        if hasattr(base, "_get_theme_and_decolor") or not hasattr(base, "_set_color"):
            return super()._get_validation_formatter()
        if self._cached_formatter is None:
            self._cached_formatter = type("Uncoloured", (base,), {"_set_color": _no_colour})(
                prog=self.prog)
        return self._cached_formatter


def _no_colour(formatter, color, **_):
    formatter._theme = None
    formatter._decolor = str

# ------------------------------------------------------------- hook options

def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """What the hook traces: --modules, --exclude, --c-calls, --lines, --fast."""
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


def add_hook_options(parser: argparse.ArgumentParser) -> None:
    """The options of the hook itself (`python -m pyust`, run), and the program after --."""
    add_filter_options(parser)
    parser.add_argument("--no-dormant", action="store_true",
                        help="keep the interpreter hooks installed while no session records "
                             "(by default they are removed then, and come back within 100 ms "
                             "of a session starting to record python:*)")
    parser.add_argument("target", nargs=argparse.REMAINDER,
                        help="the program (after --): script.py args, -m module args or -c "
                             "CODE args, as python takes them; under run, python's own "
                             "options may come first (-- -X dev app.py)")


def add_start_timeout(parser: argparse.ArgumentParser, who: str) -> None:
    """--start-timeout (run, attach): how long `who` waits for the session (pyust.start's
    _start_wait)."""
    parser.add_argument("--start-timeout", type=float, default=5.0, metavar="SECONDS",
                        help=f"how long {who} for the session to record it, once LTTng-UST's "
                             "own wait for the session daemon (LTTNG_UST_REGISTER_TIMEOUT, 3 s "
                             "by default) is over; past it the process runs on unrecorded until "
                             "the session comes, and the summary and `pyust report` say which "
                             "process lost how long a start (default: 5; 0: no wait, the loss "
                             "still told)")


def check_start_timeout(args: argparse.Namespace) -> None:
    """Raises UsageError for a --start-timeout out of range."""
    if not 0 <= args.start_timeout <= 3600:
        raise UsageError("--start-timeout must be from 0 to 3600 seconds")


def add_channel_options(parser: argparse.ArgumentParser, trace_formats) -> None:
    """The session's buffers and format: --subbuf-size, --num-subbuf, --trace-format
    (one of trace_formats)."""
    parser.add_argument("--subbuf-size", default="1M", metavar="SIZE",
                        help="sub-buffer size of the channel, per CPU (default: 1M)")
    parser.add_argument("--num-subbuf", type=int, default=8, metavar="N",
                        help="sub-buffers per CPU (default: 8, at least 2)")
    parser.add_argument("--trace-format", choices=sorted(trace_formats),
                        help="the CTF version of the trace (LTTng 2.15 or later; default: what "
                             "`lttng create` writes there, CTF 2; earlier LTTng writes CTF 1.8 "
                             "only). Trace Compass reads CTF 1.8")


def trace_format(args: argparse.Namespace, formats_known: bool) -> str | None:
    """The options of add_channel_options checked; --trace-format as `lttng create`
    takes it, where this LTTng can be told a format (formats_known: 2.15 and later),
    else None (CTF 1.8, the only format it writes)."""
    if args.num_subbuf < 2:
        raise UsageError("--num-subbuf must be at least 2")
    if formats_known:
        return args.trace_format
    if args.trace_format == "ctf-2":
        raise UsageError("--trace-format ctf-2: this LTTng writes CTF 1.8 only (LTTng 2.15 or "
                         "later writes CTF 2)")
    return None


def split_target(args: argparse.Namespace, prog: str) -> list:
    """The program's argument vector (after --). Raises UsageError when there is none."""
    target = list(args.target)
    if target and target[0] == "--":
        target = target[1:]
    if not target:
        raise UsageError(f"no program to run: {prog} -- script.py [args], -- -m module [args] "
                         "or -- -c CODE [args]")
    return target


def hook_flags(args: argparse.Namespace) -> list:
    """The hook options of args as the child's command line gives them to pyust._runner."""
    flags = (["--c-calls"] if args.c_calls else []) + (["--lines"] if args.lines else [])
    flags += ["--no-dormant"] if args.no_dormant else []
    flags += ["--fast"] if args.fast else []
    for option in ("modules", "exclude"):
        for value in getattr(args, option) or []:
            flags += [f"--{option}", value]
    return flags


def hook_options(args: argparse.Namespace) -> dict:
    """The hook options of args as pyust._runner.run_hook and pyust.start take them."""
    return {"modules": args.modules or [], "exclude": args.exclude or [],
            "c_calls": args.c_calls, "lines": args.lines, "fast": args.fast}


def module_prefixes(values: list | None, option: str = "--modules") -> str | None:
    """The prefixes of a repeatable comma-separated option as one comma-separated string
    (None when the option was not given). Raises UsageError when it names none."""
    if not values:
        return None
    prefixes = [p.strip() for value in values for p in value.split(",") if p.strip()]
    if not prefixes:
        raise UsageError(f"{option} names no module: give comma-separated module names, "
                         f"e.g. {option} myproj,numpy")
    return ",".join(prefixes)


# ------------------------------------------------------------ directories

def output_directory(path: str, option: str = "--output") -> str:
    """The trace directory of option (--output): created private (0700) here, or an
    existing empty one. Its path must be safe (safe_directory_path); returns it with the
    symbolic links of its parents resolved. Raises UsageError."""
    path = safe_directory_path(path, option)
    try:
        os.mkdir(path, 0o700)
        return path
    except FileExistsError:
        pass
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot create it: {error.strerror}") from None
    _check_directory(path, path, option, final=True)
    if os.listdir(path):
        raise UsageError(f"{option} {path} is not empty: choose another directory "
                         "or remove this one")
    return path


def private_directory(path: str, option: str) -> str:
    """A directory of option's (--shm-path), created private (0700) when missing; its
    path safe as for output_directory. Raises UsageError."""
    path = safe_directory_path(path, option)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot create it: {error.strerror}") from None
    _check_directory(path, path, option, final=True)
    return path


def safe_directory_path(path: str, option: str) -> str:
    """path (absolute, its parents' links resolved) where pyust, or a session daemon
    running as root, will write: after the checks, nobody but the caller and root can
    change what it names. The directory is not made here; its missing parents are
    (0755 at most).

    As OpenSSH checks the paths it trusts: the directory is not a symbolic link, and it
    and each of its parents that exists belongs to the caller or to root. A parent that
    others may write to (its group or every user) is refused unless it has the sticky
    bit, as /tmp has: there, only an entry's owner can remove or rename it. The
    directory itself may not be writable by others at all, sticky or not: they could
    create the names the trace will take (a link planted at ust/ steers root's writes
    anywhere). Raises UsageError with the reason."""
    path = os.path.abspath(path)
    if os.path.islink(path):
        raise UsageError(f"{option} {path} is a symbolic link: give the directory itself")
    # Links above it are resolved once, here: the path returned has none, and its checked
    # parents keep anyone else from putting one there.
    path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    current = "/"
    for name in [""] + os.path.dirname(path).split("/")[1:]:
        current = os.path.join(current, name)
        try:
            if not os.path.lexists(current):
                os.mkdir(current, 0o755)
        except FileExistsError:
            pass
        except OSError as error:
            raise UsageError(f"{option} {path}: cannot create {current}: "
                             f"{error.strerror}") from None
        _check_directory(current, path, option, final=False)
    return path


def _check_directory(directory: str, path: str, option: str, final: bool) -> None:
    """Raises UsageError unless directory (path itself when final, else one of its
    parents) is a directory that only the caller and root can change, or (a parent) one
    with the sticky bit."""
    try:
        info = os.lstat(directory)
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot examine {directory}: "
                         f"{error.strerror}") from None
    what = f"{option} {path}" + ("" if final else f": {directory}")
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{what} is a symbolic link: give the directory itself")
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{what} exists and is not a directory")
    if info.st_uid not in (0, os.geteuid()):
        raise UsageError(f"{what} belongs to {describe_user(info.st_uid)}, who could change "
                         "what is in it: give a directory of your own")
    others = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if others and (final or not info.st_mode & stat.S_ISVTX):
        who = "every user" if info.st_mode & stat.S_IWOTH else "its group"
        sticky = "" if final else " without the sticky bit"
        raise UsageError(f"{what} is writable by {who} (mode "
                         f"{stat.S_IMODE(info.st_mode):04o}){sticky}, who could change what "
                         "is in it: give a directory of your own")


def user_name(uid: int) -> str:
    """uid's login name, or `uid N` for one the password database does not know."""
    import pwd  # only for messages

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def describe_user(uid: int) -> str:
    """`user NAME (uid N)`, or `uid N`: uid for a message."""
    name = user_name(uid)
    return name if name == f"uid {uid}" else f"user {name} (uid {uid})"


# ----------------------------------------------------- durations and times

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
    from decimal import Decimal, InvalidOperation  # only report's and top's options need it

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
    import datetime as _datetime  # only report's times need it

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


# ------------------------------------------------------ argparse value types

def duration(text: str) -> int:
    """A duration (parse_duration) in ns."""
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def ident(text: str) -> int:
    """A process or thread id."""
    if not re.fullmatch(r"\d+", text.strip()) or int(text) >= 2**63:
        raise argparse.ArgumentTypeError(f"bad id {text!r}: expected a process or thread id")
    return int(text)


def count(text: str) -> int:
    """A whole number >= 0."""
    if not re.fullmatch(r"\d+", text.strip()) or int(text) >= 2**53:
        raise argparse.ArgumentTypeError(f"bad number {text!r}: expected a whole number >= 0")
    return int(text)


def positive_count(text: str) -> int:
    """A whole number >= 1."""
    if not re.fullmatch(r"\d+", text.strip()) or not 0 < int(text) < 2**53:
        raise argparse.ArgumentTypeError(f"bad count {text!r}: expected a number >= 1")
    return int(text)


def megabytes(text: str) -> float:
    """A size in megabytes >= 0."""
    try:
        value = float(text.strip())
    except ValueError:
        value = -1.0
    if not 0 <= value < 2**40:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: expected megabytes >= 0, e.g. "
                                         "100 or 0.5")
    return value


def share(text: str) -> float:
    """A percentage from 0 to 100 (a trailing % allowed)."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"bad share {text!r}: expected a percentage from 0 "
                                         "to 100, e.g. 0.5")
    return value


def timeout(text: str) -> float:
    """Seconds >= 0, finite (0: no limit)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"bad timeout {text!r}: expected seconds >= 0")
    return value
