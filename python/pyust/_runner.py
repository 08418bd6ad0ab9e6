"""Run a target program in this interpreter under the hook, as Python would.

`python -m pyust -- app.py args` must behave like `python app.py args`:
same sys.argv, same __main__ module (__name__, __file__, __spec__), same
sys.path[0], same traceback text and exit status for an unhandled exception.
The target's code runs with the hook on from its first line; the frames of
pyust's own start-up are hidden from the trace.
"""

from __future__ import annotations

import importlib.machinery
import io
import os
import runpy
import sys
import types
from dataclasses import dataclass


class TargetError(Exception):
    """The target cannot be run (no such file, no such module)."""


@dataclass
class Target:
    code: types.CodeType
    main_globals: dict
    argv: list
    path0: str


def _new_main(**attrs) -> dict:
    main = types.ModuleType("__main__")
    main.__dict__.update(attrs)
    # Keep pyust's own __main__ alive: its functions are running.
    sys.modules["__pyust_main__"] = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    return main.__dict__


def _module_target(name: str, args: list) -> Target:
    try:
        mod_name, spec, code = runpy._get_module_details(name)  # same lookup as python -m
    except ImportError as error:
        raise TargetError(str(error)) from None
    except SyntaxError as error:
        _reraise_as_untraced(error, None)
    origin = spec.origin if spec.has_location else name
    main_globals = _new_main(
        __name__="__main__",
        __file__=origin,
        __cached__=spec.cached,
        __loader__=spec.loader,
        __package__=spec.parent,
        __spec__=spec,
    )
    return Target(code, main_globals, [origin, *args], os.getcwd())


def _script_target(path: str, args: list) -> Target:
    if os.path.isdir(path) or (os.path.isfile(path) and _is_zip(path)):
        # A directory or zip application: its __main__ module, as python does.
        sys.path.insert(0, path)
        target = _module_target("__main__", args)
        target.argv[0] = path
        target.path0 = path
        return target
    try:
        with io.open_code(path) as stream:
            source = stream.read()
    except OSError as error:
        raise TargetError(f"can't open file {path!r}: [Errno {error.errno}] {error.strerror}") from None
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        _reraise_as_untraced(error, None)
    main_globals = _new_main(
        __name__="__main__",
        __file__=path,
        __cached__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __package__=None,
        __spec__=None,
    )
    return Target(code, main_globals, [path, *args], os.path.dirname(os.path.abspath(path)))


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)


def prepare(argv: list) -> Target:
    """Build the target from `app.py args` or `-m module args`.

    Raises TargetError for a file or module that does not exist.
    """
    if argv[0] == "-m":
        if len(argv) < 2:
            raise TargetError("-m needs a module name")
        target = _module_target(argv[1], argv[2:])
    else:
        target = _script_target(argv[0], argv[1:])
    sys.argv[:] = target.argv
    if sys.path and sys.path[0] in ("", os.getcwd()) and argv[0] != "-m":
        sys.path[0] = target.path0
    elif not sys.path or sys.path[0] != target.path0:
        sys.path.insert(0, target.path0)
    target.main_globals.setdefault("__builtins__", __builtins__)
    return target


def run(target: Target, start) -> None:
    """Start the hook (start()), then run the target's code.

    Returns when the target's module code returns; SystemExit propagates as
    it would untraced. Any other exception is re-raised with the runner's
    frames removed from what sys.excepthook prints.
    """
    start()
    try:
        exec(target.code, target.main_globals)
    except SystemExit:
        raise
    except BaseException as error:
        _reraise_as_untraced(error, error.__traceback__.tb_next)


def _reraise_as_untraced(error: BaseException, target_tb):
    """Raise error so that sys.excepthook shows it with traceback target_tb
    (the target's own frames, or None for an error before its first line)."""
    # Python prints an unhandled exception with sys.excepthook and sets the
    # exit status (1, or death by SIGINT for KeyboardInterrupt) once it has
    # left every frame. Re-raising keeps that path; the wrapper shows the
    # traceback from the target's first frame, as an untraced run shows it.
    user_hook = sys.excepthook

    def excepthook(exc_type, value, tb):
        if value is error:
            # CPython's hook prints value.__traceback__ when it has one.
            tb = target_tb
            value.__traceback__ = tb
        user_hook(exc_type, value, tb)

    sys.excepthook = excepthook
    raise error
