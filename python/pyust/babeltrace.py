"""Running babeltrace2 and reading what it says: pyust's plugin and where it is, the
command lines of a report, a count and a live query, babeltrace2's errors as one line.

A library: it never touches argparse, and raises BabeltraceError (one line, for
`pyust: error: ...`) for what goes wrong. Only the standard library is used, so that
it works with any interpreter pyust is installed for, bt2 or not: babeltrace2 runs as
a subprocess, never through a shell, always under a timeout (babeltrace2 2.0.4 can
spin for ever on a damaged trace).

Where the plugin comes from: the directories of PYUST_PLUGIN_PATH (separated by
':'), else the build tree's src/plugin when this package is the build tree's
(build/python/pyust), else where the build installed it (pyust._build_config): inside
the package for a wheel (pip), babeltrace2's system plugin directory for scripts/setup.
`pyust plugin-path` prints the directory (plugin_dir).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess

PLUGIN_FILE = "babeltrace-plugin-pyust.so"
PLUGIN_PATH_VARIABLE = "PYUST_PLUGIN_PATH"
# How long a query (a live session list, the trace's first time) may take.
QUERY_TIMEOUT = 15.0


class BabeltraceError(Exception):
    """The trace cannot be read or babeltrace2 failed; exit status 1."""


class TimedOut(BabeltraceError):
    """babeltrace2 did not finish within the time it was given, and was killed."""


class ClosedPipe(Exception):
    """Whoever read babeltrace2's output stopped reading (`pyust report TRACE | head`):
    not an error, the output ends quietly as any Unix tool's does."""


def param_string(text: str) -> str:
    """text as a double-quoted string of babeltrace2's parameter syntax.
    Raises BabeltraceError for text that is not valid Unicode (a path in another
    encoding)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BabeltraceError(f"{text!r} is not valid UTF-8: babeltrace2 cannot take it as a "
                              "parameter (rename it)") from None
    out = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):03o}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def plugin_dirs() -> list:
    """The --plugin-path directories babeltrace2 needs to find pyust's plugin
    (empty: it is in babeltrace2's system directory). Raises BabeltraceError when
    PYUST_PLUGIN_PATH names something that is not a directory."""
    value = os.environ.get(PLUGIN_PATH_VARIABLE)
    if value:
        dirs = [d for d in value.split(os.pathsep) if d]
        for directory in dirs:
            if not os.path.isdir(directory):
                raise BabeltraceError(f"{PLUGIN_PATH_VARIABLE} names {directory}, which is not a "
                                      "directory")
        return [os.path.abspath(d) for d in dirs]
    # build/python/pyust/babeltrace.py -> build/src/plugin
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    build_plugin = os.path.join(build, "src", "plugin")
    if os.path.isfile(os.path.join(build_plugin, PLUGIN_FILE)):
        return [build_plugin]
    installed, is_system = _installed_plugin_dir()
    # babeltrace2 loads its system directory's plugins by itself: naming that directory
    # again would load pyust's twice.
    if installed and not is_system and os.path.isfile(os.path.join(installed, PLUGIN_FILE)):
        return [installed]
    return []


def _installed_plugin_dir() -> tuple:
    """(the directory where the build installed the plugin, or "" without one; whether it
    is babeltrace2's system plugin directory), from pyust._build_config."""
    try:
        from . import _build_config
    except ImportError:  # the package's sources run as they are, not built
        return "", False
    directory = _build_config.PLUGIN_DIR
    if directory:
        # A wheel's plugin is inside the package, wherever pip put it.
        directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), directory)
    return directory, _build_config.PLUGIN_DIR_IS_SYSTEM


def plugin_dir() -> str:
    """The directory that holds the plugin pyust's commands use (`pyust plugin-path`: for
    `babeltrace2 --plugin-path DIR`). Raises BabeltraceError when it is nowhere pyust
    looks, or PYUST_PLUGIN_PATH names something that is not a directory."""
    candidates = plugin_dirs()
    if not candidates:
        installed, _ = _installed_plugin_dir()
        candidates = [installed] if installed else []
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, PLUGIN_FILE)):
            return directory
    if candidates:
        raise BabeltraceError(f"{PLUGIN_FILE} is not in {os.pathsep.join(candidates)}: "
                              "build pyust again (scripts/setup, or pip install)")
    raise BabeltraceError(f"this pyust was built without its babeltrace2 plugin ({PLUGIN_FILE}): "
                          "install libbabeltrace2-dev and build pyust again")


def has_native_events(metadata_texts) -> bool:
    """Whether the traces' metadata (the texts, TSDL or JSON: ctf.check_metadata's) declare
    lttng-ust's cyg-profile events (pyust run --native): their frames need babeltrace2's
    debug-info filter for names."""
    return any(b"lttng_ust_cyg_profile" in text for text in metadata_texts)


def has_batches(metadata_texts) -> bool:
    """Whether the traces' metadata texts declare python:batch: then filter.pyust.expand
    goes in front of the sink. LTTng declares every event of the provider, so this holds
    for any trace of a pyust with the fast mode, fast or not; the filter lets a standard
    trace through without holding anything back."""
    return any(b'"python:batch"' in text for text in metadata_texts)


# What begins the lines sink.pyust.report writes to standard error (its parameter note-prefix),
# so that they read as pyust's own: "pyust: warning: damaged trace: ...".
NOTE_PREFIX = "pyust: "
DAMAGE_NOTE = NOTE_PREFIX + "warning: damaged trace: "


def report_command(traces: list, params: dict, plugin_path: list,
                        debug_info: bool = False, expand: bool = False) -> list:
    """The argument vector of the babeltrace2 run (no shell): traces are
    absolute paths (never taken for options), params a dict of str or int.
    debug_info puts flt.lttng-utils.debug-info before the sink, which then
    names native frames by function (it resolves each event's ip context);
    expand puts filter.pyust.expand first, which turns fast-mode batches into
    python:call/return/line events."""
    command = ["babeltrace2"]
    for directory in plugin_path:
        command += ["--plugin-path", directory]
    command += [os.path.abspath(t) for t in traces]
    if expand:
        command += ["-c", "filter.pyust.expand"]
    if debug_info:
        command += ["-c", "flt.lttng-utils.debug-info"]
    command += ["-c", "sink.pyust.report"]
    for name, value in {"note-prefix": NOTE_PREFIX, **params}.items():
        if isinstance(value, bool):
            text = "yes" if value else "no"
        else:
            text = str(value) if isinstance(value, int) else param_string(value)
        command += ["-p", f"{name}={text}"]
    return command


def require() -> None:
    if shutil.which("babeltrace2") is None:
        raise BabeltraceError("babeltrace2 is not installed (Debian: apt-get install babeltrace2, "
                              "or run scripts/setup)")


def query(command: list, timeout: float) -> str:
    """Runs a short babeltrace2 command; its standard output."""
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=timeout or None, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        raise TimedOut(f"babeltrace2 did not answer within {timeout:g} s "
                       f"({shlex.join(command[:4])})") from None
    if result.returncode != 0:
        raise BabeltraceError(explain_failure(result.stderr, result.returncode))
    return result.stdout


_CAUSE_HEADER = re.compile(r"^(?:ERROR:|CAUSED BY)\s*\[([^\]]*)\][^\n]*\n", re.M)
# A babeltrace2 log line: date, time, pid, tid, level, tag, function@file:line, message.
_LOG_ERROR = re.compile(r"^\d\d-\d\d [\d:.]+\s+\d+\s+\d+ E (PLUGIN/\S+) \S+ (.*)$", re.M)
_LOG_LINE = re.compile(r"^\d\d-\d\d [\d:.]+\s+\d+\s+\d+ [TDIWEF] ")
_ADDRESS = re.compile(r"\s*[\w-]+-addr=0x[0-9a-fA-F]+,?")
_QUOTED_PATH = re.compile(r"[`'](/[^`'\n]+)[`']")


_ASCII_SPACE = re.compile(r"[ \t\r\n]+")


def error_causes(stderr: str) -> list:
    """The causes of babeltrace2's last error report, outermost first, as
    (origin, message) pairs: origin is what is in brackets ("Babeltrace CLI",
    "libbabeltrace2", "sink.pyust.report: 'sink.pyust.report'"), message one
    line without object addresses."""
    start = stderr.rfind("\nERROR:") + 1 if "\nERROR:" in stderr else 0
    report = stderr[start:]
    headers = list(_CAUSE_HEADER.finditer(report))
    causes = []
    for header, following in zip(headers, headers[1:] + [None]):
        body = report[header.end():following.start() if following else len(report)]
        # Lines are joined at ASCII white space only: str.split() would also take the
        # control characters a damaged trace's strings put in the message.
        text = " ".join(_ASCII_SPACE.split(body.strip(" \t\r\n")))
        causes.append((header.group(1), _without_addresses(text)))
    return causes


def _without_addresses(text: str) -> str:
    """text without the object addresses babeltrace2 puts in its messages (comp-addr=0x...)."""
    return _ADDRESS.sub("", text).rstrip(", ")


def is_log_line(line: str) -> bool:
    """Whether line is one of babeltrace2's log lines (date, time, pid, tid, level, ...)."""
    return bool(_LOG_LINE.match(line))


def explain_failure(stderr: str, returncode: int) -> str:
    """One line that says why babeltrace2 failed, from its standard error."""
    return one_line(_explanation(stderr, returncode))


# Characters that would break a line or a terminal: C0 and C1 controls, and the separators
# str.splitlines() breaks at besides them. A damaged trace's strings reach babeltrace2's
# messages as they are.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """text with what would break its line or the terminal written as an escape (\\x1d)."""
    return _UNPRINTABLE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def _explanation(stderr: str, returncode: int) -> str:
    causes = error_causes(stderr)
    if not causes:
        lines = [line.strip() for line in stderr.split("\n") if line.strip()]
        return f"babeltrace2 failed (exit status {returncode}): " + (
            lines[-1] if lines else "no message")
    origin, message = causes[-1]
    selection = re.search(r"No event matches (.*)", message)
    if "sink.pyust." in origin and selection:
        # The sink names its parameters; the user gave options.
        return re.sub(r"\b(pid|tid)=(\d+)", r"--\1 \2", "no event matches " + selection.group(1))
    if "sink.pyust." in origin:
        return re.sub(r"^Cannot initialize sink\.pyust\.report: ", "", message)
    if re.search(r'Cannot find component class: plugin-name="pyust"', message):
        return (f"babeltrace2 cannot find pyust's plugin ({PLUGIN_FILE}): run scripts/setup, "
                f"which installs it, or set {PLUGIN_PATH_VARIABLE} to the build's src/plugin")
    reading = "source.ctf" in origin or "query" in message
    # The muxer meets a stream whose times go backwards: events decoded from garbage.
    reading = reading or ("muxer" in origin and "timestamp is less than" in message)
    if not origin.endswith("'source.ctf.fs'"):
        # A generic cause ("query method failed"): the plugin's own error log says more.
        logged = _LOG_ERROR.search(stderr)
        if logged:
            message = _without_addresses(logged.group(2))
            reading = reading or logged.group(1).startswith("PLUGIN/CTF")
    paths = [p for _, text in causes for p in _QUOTED_PATH.findall(text)]
    if paths and paths[-1] not in message:
        message += f" (in {paths[-1]})"
    if reading:
        return f"damaged trace: babeltrace2 cannot read it: {message}"
    return f"babeltrace2 failed (exit status {returncode}): {message}"


def run(command: list, timeout: float, stdout: int | None = None) -> str:
    """Runs the report; its standard output goes to ours, or to the descriptor stdout.
    Returns babeltrace2's standard error (warnings, the sink's notes). Raises
    BabeltraceError on failure or timeout (the process is killed then, as on any
    exception while it runs)."""
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stdout,
                             stderr=subprocess.PIPE)
    try:
        _, stderr = child.communicate(timeout=timeout or None)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise TimedOut(f"babeltrace2 did not finish within {timeout:g} s and was stopped: "
                       "a damaged trace, or a large one (raise --timeout; 0 for no "
                       "limit)") from None
    except BaseException:  # KeyboardInterrupt: do not leave babeltrace2 running
        child.kill()
        child.wait()
        raise
    text = stderr.decode("utf-8", "replace")
    if child.returncode == -signal.SIGPIPE or (
            child.returncode != 0 and "error=Broken pipe" in text):
        # babeltrace2 died of SIGPIPE (the default action, which subprocess restores), or
        # a parent that ignores SIGPIPE made its write fail with EPIPE.
        raise ClosedPipe()
    if child.returncode != 0:
        if child.returncode < 0:
            raise BabeltraceError(f"babeltrace2 was killed by signal {-child.returncode}")
        raise BabeltraceError(explain_failure(text, child.returncode))
    return text


def trace_start(metadata_dirs: list, timeout: float) -> int:
    """The time (ns from the origin) of the first packet of the traces, from
    babeltrace2's babeltrace.trace-infos query. Raises BabeltraceError."""
    inputs = "[" + ", ".join(param_string(d) for d in metadata_dirs) + "]"
    result = query(["babeltrace2", "query", "src.ctf.fs", "babeltrace.trace-infos",
                    "-p", f"inputs={inputs}"], timeout)
    begins = [int(m) for m in re.findall(r"^\s*begin:\s*(-?\d+)\s*$", result, re.M)]
    if not begins:
        raise BabeltraceError("cannot tell the day the trace starts: give --from/--to with a "
                              "date (YYYY-MM-DD HH:MM:SS) or in ns")
    return min(begins)


def live_sessions(relay_url: str) -> list:
    """The live sessions of the relay daemon at relay_url (net://HOST[:PORT]), as dicts
    (session-name, target-hostname, url, client-count, stream-count). Raises
    BabeltraceError when it cannot be reached."""
    command = ["babeltrace2", "query", "src.ctf.lttng-live", "sessions",
               "-p", f"url={param_string(relay_url)}"]
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, errors="replace", timeout=QUERY_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise BabeltraceError(f"the relay daemon at {relay_url} did not answer within "
                              f"{QUERY_TIMEOUT:g} s") from None
    if result.returncode != 0:
        raise BabeltraceError(f"cannot list the live sessions of {relay_url} (is an "
                              "lttng-relayd listening there, on its live port, 5344 by "
                              f"default?): {explain_failure(result.stderr, result.returncode)}")
    sessions = []
    for line in result.stdout.splitlines():
        match = re.match(r"^(-?)\s*([\w-]+):\s*(.*)$", line)
        if line.strip() == "-" or (match and match.group(1)):
            sessions.append({})
        if match and sessions:
            sessions[-1][match.group(2)] = match.group(3).strip()
    return [s for s in sessions if s]


def count_events(trace: str, *, fast: bool, timeout: float = 600) -> int | None:
    """Events in a trace, counted by babeltrace2's counter sink; None when
    babeltrace2 is missing or cannot read the trace in time. With fast, the
    trace goes through pyust's filter.pyust.expand first: fast-mode batches
    count as the events they hold."""
    babeltrace2 = shutil.which("babeltrace2")
    if babeltrace2 is None or not os.path.isdir(trace):
        return None
    command = [babeltrace2]
    if fast:
        try:
            directories = plugin_dirs()
        except BabeltraceError:
            directories = []
        for directory in directories:
            command += ["--plugin-path", directory]
    command.append(trace)
    if fast:
        command.append("--component=filter.pyust.expand")
    try:
        result = subprocess.run(command + ["--component=sink.utils.counter"],
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if result.returncode != 0:
        return None
    # The counter prints running totals every 10,000 messages: the last wins.
    count = None
    for line in result.stdout.splitlines():
        words = line.split()
        if words[1:] == ["Event", "messages"] and words[0].isdigit():
            count = int(words[0])
    return count
