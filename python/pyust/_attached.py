"""The side of `pyust attach` that runs inside the traced process.

`pyust attach` (pyust.remote) writes a step file into a private control
directory and has the target's main thread run it at its next safe point
(sys.remote_exec on 3.14+, a pending call through gdb before). The step file
imports this module and calls run(). On 3.10 to 3.13 the detach is a pending
call of the native module's pyust_attach_stop(), which calls stop_pending().
Everything here runs in somebody else's program, so:
- nothing raises out of it: every outcome goes into a result file that the
  attaching process waits for (a dict's repr: no module of the standard
  library runs, since it would be traced once the hooks are in), in the
  directory it names (the control directory's answers/, the one place there
  that this process's user may write);
- the injected code's frames never show in the trace: the control directory's
  files are hidden from the hook, and so is the "<string>" trampoline that
  gdb's pending call compiles on top of the program's stack;
- a stop undoes what a start did: the hooks, the session watcher thread, the
  wrappers pyust.start() puts on threading, os._exit and the exec functions,
  the sys.path entry the step added. What stays is what cannot be unloaded:
  the imported modules, and LTTng-UST's own listener threads (idle, as in any
  program linked with LTTng-UST).
"""

import os
import sys
import threading

# The attachment between its start and its stop: the control directory, the
# sys.path entry the step added, the count of events at the start, and what
# pyust.start() wrapped.
_state = {}


def _write_result(control: str, action: str, result: dict) -> None:
    """The result file of one step, written whole (the attacher polls for it)."""
    final = control + os.sep + "result-" + action
    with open(final + ".part", "wb") as stream:
        stream.write(repr(result).encode())
    os.replace(final + ".part", final)


def _hide_trampoline(native, frame, step_file: str) -> None:
    """Hides the one-line trampoline that gdb's pending call compiled as
    "<string>" just beneath the step file's module frame (the step files
    themselves are under the hidden control directory)."""
    while frame is not None and frame.f_code.co_filename != step_file:
        frame = frame.f_back
    while frame is not None and frame.f_code.co_filename == step_file:
        frame = frame.f_back
    if frame is not None and frame.f_code.co_filename == "<string>" \
            and frame.f_code.co_name == "<module>":
        native.hide_code(frame.f_code)


def _start(pyust, control: str, options: dict, hidden: str) -> dict:
    if pyust.is_active():
        return {"error": "it is traced by pyust already (pyust run, the .pth or "
                         "pyust.start() in the program): stop that first"}
    wrapped_before = pyust._bootstrap_inner is not None
    os_functions = {name: getattr(os, name, None) for name in pyust._LEAVING}
    emitted = pyust.emitted_events()
    pyust.start(_start_wait=options.get("start_wait"),
                modules=options.get("modules"), exclude=options.get("exclude"),
                c_calls=options.get("c_calls", False), lines=options.get("lines", False),
                fast=options.get("fast", False), _hidden_dir=hidden)
    _state["control"] = control
    _state["emitted"] = emitted
    if not wrapped_before and pyust._bootstrap_inner is not None:
        _state["bootstrap_inner"] = pyust._bootstrap_inner
    _state["os_functions"] = {name: function for name, function in os_functions.items()
                              if getattr(os, name, None) is not function}
    return {"ok": True, "backend": pyust._hook.backend()}


def _stop(pyust) -> dict:
    if not pyust.is_active():
        return {"error": "pyust was not tracing any more"}
    pyust.stop()
    events = pyust.emitted_events() - _state.get("emitted", 0)
    # What pyust.start() wrapped goes back as it was before the attach.
    original = _state.get("bootstrap_inner")
    if original is not None:
        threading.Thread._bootstrap_inner = original
        pyust._bootstrap_inner = None
    for name, function in _state.get("os_functions", {}).items():
        setattr(os, name, function)
    added_path = _state.get("added_path")
    if added_path in sys.path:
        sys.path.remove(added_path)
    _state.clear()
    return {"ok": True, "events": events, "lost_start": pyust._hook.lost_start()}


def run(action: str, control: str, options: dict, frame, step_file: str,
        added_path) -> bool:
    """One step of pyust attach in the target's main thread: action "start" or
    "stop" (3.14+); control the directory of the result files; frame the step's
    own frame; step_file its file, whose directory (holding control) is hidden
    from the hook; added_path the sys.path entry
    the step added to import pyust (None: none), taken off again at the stop.
    Whether the step did what it was asked; its result file says more."""
    try:
        import pyust

        native = pyust._load()
        if action == "start":
            _hide_trampoline(native, frame, step_file)
            result = _start(pyust, control, options, os.path.dirname(step_file) + os.sep)
            if result.get("ok"):
                _state["added_path"] = added_path
        else:
            result = _stop(pyust)
    except BaseException as error:  # never into the program: the attacher reports it
        result = {"error": f"{type(error).__name__}: {error}"}
    try:
        _write_result(control, action, result)
    except OSError:
        pass  # the attacher gave up and removed its directory
    return bool(result.get("ok"))


def stop_pending() -> None:
    """The detach on 3.10 to 3.13 (called by pyust_attach_stop, a pending call)."""
    control = _state.get("control")
    try:
        import pyust

        result = _stop(pyust)
    except BaseException as error:
        result = {"error": f"{type(error).__name__}: {error}"}
    if control:
        try:
            _write_result(control, "stop", result)
        except OSError:
            pass
