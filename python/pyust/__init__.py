"""pyust: trace Python programs into LTTng.

The control API. Tracing emits LTTng-UST events of the provider ``python``;
an LTTng session (``lttng create``, ``lttng enable-event -u 'python:*'``,
``lttng start``, or ``python -m pyust run``) records them.

    import pyust
    with pyust.tracing():
        work()

Importing this package is cheap: the native hook (and with it liblttng-ust,
which registers the process with the session daemon) loads on first use.
It imports no more than the hook needs (atexit): the hook mode and the .pth
start programs after importing it, and a program must start with the modules it
has untraced. (Hence no `from __future__ import`, no typing, no contextlib, and
no threading: with threading imported, the interpreter runs threading._shutdown
at exit, whose calls were in the profile of every program, threads or not; pyust
waits for the program's own import of threading, _ThreadingWatcher.)

The package's layers, each importing only from the layers below it and never
another module's private names:
- the hook: this module, _native (C++), _runner (the hook mode), _activate, _attached,
  _greenlet, tally;
- leaves, importing nothing of pyust's: ctf (CTF trace files on disk, 1.8 and 2), args
  (command-line support: UsageError, the parser, option types), pth;
- libraries, which never touch argparse and raise their own errors: lttng (sessions and
  channels), sessiond, kernel and perf_ctf, babeltrace (running babeltrace2 and reading
  its answers), salvage, live, native, attach_target and remote (attach), children;
- commands: pyust.commands, one module per command (run, attach, report, top,
  activation for enable/disable, cflags, hook for the hook mode's argparse path), and
  live_options, the live-session options that run and attach share;
- cli, which only picks the command and ends its errors;
- __main__, the way in (`python -m pyust`, the pyust command, pyust run's child): it holds
  the table of the commands and sends a command line to _runner (the hook mode) or to cli.
"""

import _thread
import atexit
import os
import sys

# One line, not a traceback, on an interpreter pyust does not support: named after the
# package, the error is what `python3.9 -m pyust` prints as the reason it cannot run.
if sys.version_info < (3, 10):
    raise ImportError("pyust supports CPython 3.10 to 3.15; this is %d.%d (3.9 and older are "
                      "past their end of life)" % sys.version_info[:2], name=__name__)

from . import _greenlet  # noqa: E402

__all__ = [
    "TracerError",
    "start",
    "stop",
    "tracing",
    "rundown",
    "is_active",
    "is_hooked",
    "emitted_events",
]

__version__ = "0.1.0"


class TracerError(RuntimeError):
    """pyust cannot do what was asked; the message says how to fix it."""


_hook = None
_lock = _thread.allocate_lock()


def _load():
    """Load and initialise the native hook once per process."""
    global _hook
    with _lock:
        if _hook is None:
            if _in_subinterpreter():
                raise TracerError(
                    "Cannot trace in a sub-interpreter: pyust's native hook holds "
                    "per-process state and traces the main interpreter only; start pyust "
                    "there (code run in sub-interpreters is not traced)")
            try:
                from . import _native as native
            except ImportError as error:
                raise TracerError(
                    f"Cannot load pyust's native hook ({error}); build and install "
                    "pyust for this interpreter: scripts/setup --python " + sys.executable
                ) from None
            native.init(os.path.dirname(os.path.abspath(__file__)) + os.sep)
            # The native side keeps LTTng-UST consistent across fork() on its
            # own, and restarts it in the child of os.fork() only (not in
            # subprocess's fork and exec); the child hook announces the child's
            # stack once Python is ready in it.
            os.register_at_fork(before=native.before_os_fork,
                                after_in_parent=native.after_os_fork_parent,
                                after_in_child=native.after_fork_child)
            # The session watcher takes the GIL now and then: it must be gone
            # before the interpreter finalises.
            atexit.register(native.stop_watcher)
            _hook = native
    return _hook


def _in_subinterpreter() -> bool:
    """True in an interpreter other than the process's main one."""
    for name in ("_interpreters", "_xxsubinterpreters"):  # 3.13+, 3.9 to 3.12
        loaded = name in sys.modules
        try:
            interpreters = __import__(name)
            current, main = interpreters.get_current(), interpreters.get_main()
        except Exception:
            continue
        finally:
            if not loaded:  # asked here only: the program imports it if it wants it
                sys.modules.pop(name, None)
        # 3.13 answers (id, whence) pairs, earlier versions ids.
        return (current[0] if isinstance(current, tuple) else current) != (
            main[0] if isinstance(main, tuple) else main)
    return False


_bootstrap_inner = None  # threading.Thread._bootstrap_inner before pyust wrapped it


def _wrap_thread_bootstrap() -> None:
    """Each new threading.Thread names itself in the trace, and up to 3.11 moves
    itself onto the C hook, first thing in Thread._bootstrap_inner (once per
    process; inert while pyust is stopped). Not with threading.setprofile():
    each new thread would call sys.setprofile(), and CPython 3.11 guards
    setprofile with one process-wide flag that a Python audit hook (regrtest
    has one) holds while it runs, GIL released: a second thread starting then
    died of "RuntimeError: Cannot install a profile function while another
    profile function is being installed" before running its target."""
    global _bootstrap_inner
    if _bootstrap_inner is not None:
        return
    threading = sys.modules.get("threading")
    if threading is None:  # wrapped once the program imports threading
        _ThreadingWatcher.find_spec = staticmethod(_hook.find_threading_spec)
        if _threading_watcher not in sys.meta_path:
            sys.meta_path.insert(0, _threading_watcher)
        return
    original = _bootstrap_inner = threading.Thread._bootstrap_inner

    def _pyust_bootstrap_inner(self):
        native = _hook
        if native is not None and native.is_active():
            try:
                # _name, not the name property: on the eval-frame back end
                # the property's call would be traced.
                native.attach_current_thread(self._name)
            except Exception:  # never let the tracer break the thread it traces
                pass
            _greenlet.enter_thread()
        original(self)

    threading.Thread._bootstrap_inner = _pyust_bootstrap_inner


class _ThreadingWatcher:
    """A meta path finder while threading is not imported (as _greenlet's for greenlet): its
    find_spec, set by _wrap_thread_bootstrap(), is pyust._native.find_threading_spec, a C
    function that hands threading's import over to _threading_spec(), and makes the other
    imports run no Python code of pyust's."""

    __slots__ = ()
    find_spec = None


_threading_watcher = _ThreadingWatcher()


def _threading_spec(name):
    """threading's spec, its loader set to wrap Thread._bootstrap_inner once the module is
    made; the watcher leaves."""
    try:
        sys.meta_path.remove(_threading_watcher)
    except ValueError:
        pass
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = find(name, None, None) if find is not None else None
        if spec is not None:
            break
    else:
        return None
    exec_module = getattr(spec.loader, "exec_module", None)
    if exec_module is not None and not isinstance(spec.loader, type):  # not a class's

        def exec_then_wrap(module):
            exec_module(module)
            _wrap_thread_bootstrap()

        spec.loader.exec_module = exec_then_wrap
    return spec


def _prefixes(value) -> list:
    """Module prefixes from "a,b", ["a", "b,c"] or None."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    prefixes = []
    for item in value:
        if not isinstance(item, str):
            raise TracerError(f"module prefixes are strings, not {type(item).__name__}: {item!r}")
        prefixes += [p.strip() for p in item.split(",") if p.strip()]
    return prefixes


def start(*, modules=None, exclude=None, c_calls: bool = False, lines: bool = False,
          dormant: bool = True, fast: bool = False, _hide_caller_stack: bool = False,
          _command=None, _hidden_dir: str = "", _start_wait=None) -> None:
    """Start tracing every thread of this interpreter.

    modules: module-name prefixes to trace ("numpy,pandas" or a list); by
    default every module. A prefix matches on dotted boundaries: "numpy"
    traces numpy and numpy.core, not numpyro. exclude: prefixes not to trace.
    The most specific (longest) matching prefix decides; "__main__" is the
    script. c_calls: also emit python:c_call/c_return for C functions called
    from traced code. lines: also emit python:line for every line of traced
    code. dormant: while no LTTng session records python:* events, remove
    the interpreter hooks (the program runs at untraced speed) and put them
    back within 100 ms of a session starting to record; False keeps them.
    fast: record calls, returns and lines as compact records in per-thread
    batches (python:batch events) rather than one event each: about half the
    cost. Read such traces with `pyust report` or babeltrace2's
    filter.pyust.expand. Batches are written when full, every 20 ms, at
    thread exit, stop(), interpreter exit (os._exit included) and an exec
    (os.execv and the like).

    Frames already running (in this thread and others) are announced as calls
    when pyust first sees their thread, so each thread's trace is balanced.
    Raises TracerError when already tracing, or when another profiler or
    tracer (cProfile, a debugger, coverage.py) holds the interpreter's hook.
    (_command: the command line python:process reports, for pyust run on
    Pythons without sys.orig_argv; by default sys.orig_argv. _hidden_dir: code
    from files under this directory is never traced, pyust attach's own.
    _start_wait: seconds to wait, before the first event, for a session to
    record this process, and to say when it gave up (pyust run and attach: see
    _start_timeout()); None: no wait, nothing said.)
    """
    include, excluded = _prefixes(modules), _prefixes(exclude)
    native = _load()
    if native.is_active():
        raise TracerError("Cannot start tracing: pyust is already tracing; call pyust.stop() first")
    # Everything Python-level happens before the hook goes on, so that none
    # of pyust's own calls lands in the trace.
    threading = sys.modules.get("threading")
    if threading is not None:
        names = [(t.native_id, t.name) for t in threading.enumerate()
                 if t.native_id is not None]
    else:  # no other thread of threading's; the main thread gets the name it would have
        names = [(_thread.get_native_id(), "MainThread")]
    # Each new thread names itself, and up to 3.11 moves itself onto the C
    # hook (sys.monitoring and the eval-frame function cover every thread).
    _wrap_thread_bootstrap()
    native.start(c_calls=c_calls, lines=lines, hide_caller_stack=_hide_caller_stack,
                 include=include, exclude=excluded, dormant=dormant, fast=fast,
                 command=_command or [], hidden_dir=_hidden_dir,
                 start_wait_ms=-1 if _start_wait is None else max(0, round(_start_wait * 1000)))
    for tid, name in names:
        native.name_thread(tid, name)
    _greenlet.install(native)
    _wrap_leaving_functions(fast)


# The os functions after which the process runs no more of its Python code, and whether
# pyust wraps them in the standard mode too: an exec replaces the process image (its frames
# return first, in either mode), os._exit only skips the interpreter's exit (where the fast
# mode writes its last records). os's other exec functions go through execv and execve.
_LEAVING = {"_exit": False, "execv": True, "execve": True}
# name -> pyust's wrapper of that os function.
_wrappers = {}


def _wrap_leaving_functions(fast: bool) -> None:
    """Wraps os.execv and os.execve (native.leaving: the calling thread's frames return
    before the exec, and come back if it fails), and in the fast mode os._exit (the records
    are written first)."""
    native = _hook
    for name, is_exec in _LEAVING.items():
        original = getattr(os, name, None)
        if original is None or not (fast or is_exec):
            continue
        if original is _wrappers.get(name):
            continue
        _wrappers[name] = native.leaving(original, is_exec)
        setattr(os, name, _wrappers[name])


# pyust run puts its --start-timeout here, for the program and its Python children.
START_TIMEOUT_VARIABLE = "PYUST_START_TIMEOUT"


def _start_timeout():
    """How long a process started by pyust run waits for the session to record it before
    its first line (start()'s _start_wait): PYUST_START_TIMEOUT's seconds (0: no wait, but
    a start the session missed is still told), None without it.

    A session that is already recording reaches a new process only once LTTng-UST, loaded
    with pyust's hook, has registered with the session daemon: LTTng-UST waits for that
    itself, at most LTTNG_UST_REGISTER_TIMEOUT ms (3000 by default; 0: not at all), and a
    busy daemon can take longer. Past this wait the program runs anyway, unrecorded until
    the session comes, and says so (python:lost_start, pyust run's summary)."""
    value = os.environ.get(START_TIMEOUT_VARIABLE)
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < 1e6:
        print(f"pyust: warning: {START_TIMEOUT_VARIABLE}={value!r} is not a number of seconds: "
              "not waiting for the session", file=sys.stderr)
        return None
    return seconds


def stop() -> None:
    """Stop tracing. Open frames get their return events; no-op when idle."""
    if _hook is None:
        return
    _hook.stop()
    _greenlet.uninstall()
    if _threading_watcher in sys.meta_path:
        sys.meta_path.remove(_threading_watcher)


def is_active() -> bool:
    """True while pyust is tracing this interpreter."""
    return _hook is not None and _hook.is_active()


def is_hooked() -> bool:
    """True while pyust's interpreter hooks are installed: tracing is on and
    a session records python:* events (or dormancy is off)."""
    return _hook is not None and _hook.is_hooked()


def rundown() -> None:
    """Re-emit the registration of every code object and thread seen so far.

    pyust does this by itself when a session starts recording python:code
    after the program did; call it when a second session starts while a
    first one is still recording.
    """
    _load().rundown()


def emitted_events() -> int:
    """Events this process handed to LTTng (recorded plus discarded)."""
    return 0 if _hook is None else _hook.emitted_events()


def _tally_into(directory: str) -> bool:
    """Under pyust run: count the events this process hands to LTTng in a new
    file of directory from now on (pyust.tally); before start(). False when the
    file cannot be made (the run then counts the trace instead)."""
    try:
        _load().tally_into(directory)
    except TracerError:
        return False
    return True


def tracing(*, modules=None, exclude=None, c_calls: bool = False, lines: bool = False,
            dormant: bool = True, fast: bool = False) -> "_Tracing":
    """Trace the body of a with statement (see start()); also a decorator."""
    return _Tracing(dict(modules=modules, exclude=exclude, c_calls=c_calls, lines=lines,
                         dormant=dormant, fast=fast))


class _Tracing:
    """tracing()'s context manager (contextlib's would import contextlib and
    its modules into every traced program)."""

    def __init__(self, options: dict):
        self._options = options

    def __enter__(self) -> None:
        start(**self._options)

    def __exit__(self, *exc_info) -> None:
        stop()

    def __call__(self, function):
        import functools

        @functools.wraps(function)
        def traced(*args, **kwargs):
            with _Tracing(self._options):
                return function(*args, **kwargs)

        return traced
