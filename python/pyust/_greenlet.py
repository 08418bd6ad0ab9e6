"""greenlet under pyust: switches between the greenlets of a thread, modelled.

A greenlet switch swaps the thread's whole Python stack for another one, with no
call or return the interpreter's hooks could see. pyust models it as a generator
that yields and resumes: at each switch, the frames of the greenlet left return
(innermost first) and those of the greenlet entered are called again (outermost
first). Every thread's calls and returns stay balanced, each frame's time is
its own greenlet's, and resuming counts as a call (as for generators).

greenlet reports switches to a tracer (greenlet.settrace) of each thread. pyust
sets its tracer, which calls any tracer set before it, in the thread that
imports greenlet (or that starts tracing once greenlet is imported) and in the
threads started later (through pyust's thread bootstrap, up to Python 3.11).
A tracer set after pyust's, without calling it, turns the model off; the
analysis then reports each switch as a mismatch ("Incomplete:").
"""

import _thread
import sys

# threading.local is _thread._local: taken from _thread, which every interpreter
# has imported at start-up, so that importing pyust does not import threading
# (a program may import it first from another thread, as CPython's tests do).
_state = _thread._local()
_native = None


def _tracer(event, args):
    """greenlet's tracer: called after each switch, on the greenlet entered."""
    if event in ("switch", "throw") and _native is not None:
        origin, _ = args
        # The frame below this one is the top of the greenlet entered (none for
        # a greenlet that starts: its first frame is a call the hook sees).
        _native.switch_stacks(origin.gr_frame, sys._getframe(0).f_back)
    previous = getattr(_state, "previous", None)
    if previous is not None:
        previous(event, args)


def enter_thread() -> None:
    """Sets pyust's greenlet tracer in the calling thread (once), when greenlet
    is imported. Never raises."""
    greenlet = sys.modules.get("greenlet")
    if greenlet is None or getattr(_state, "is_set", False):
        return
    try:
        _state.previous = greenlet.settrace(_tracer)
        _state.is_set = True
    except Exception:  # an unusual greenlet: its switches stay unmodelled
        pass


def find_spec(name):
    """greenlet's spec, its module set to get pyust's tracer once executed (the
    watcher's native find_spec hands greenlet's import over to this)."""
    _unwatch()
    from importlib.util import find_spec as find

    spec = find(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return spec
    exec_module = spec.loader.exec_module

    def exec_then_trace(module):
        exec_module(module)
        enter_thread()

    spec.loader.exec_module = exec_then_trace
    return spec


class _ImportWatcher:
    """A meta path finder that sets the tracer once greenlet is imported. Its
    find_spec, set by install(), is pyust._native.find_greenlet_spec: a C
    function, which any other import calls without running a Python frame of
    pyust's (a debugger stepping into an import, or the trace module's
    coverage, would see one)."""

    __slots__ = ()
    find_spec = None


_watcher = _ImportWatcher()


def _unwatch() -> None:
    try:
        sys.meta_path.remove(_watcher)
    except ValueError:
        pass


def install(native) -> None:
    """At pyust.start(): model greenlet switches, now or once greenlet is
    imported."""
    global _native
    _native = native
    _ImportWatcher.find_spec = staticmethod(native.find_greenlet_spec)
    if "greenlet" in sys.modules:
        enter_thread()
    elif _watcher not in sys.meta_path:
        sys.meta_path.insert(0, _watcher)


def uninstall() -> None:
    """At pyust.stop(): no more watching for the import (tracers already set
    stay, and do nothing while pyust is stopped)."""
    _unwatch()
