"""Run a target program in this interpreter under the hook, as Python would.

`python -m pyust -- app.py args` must behave like `python app.py args` (and `-m module
args`, `-c CODE args` like `python -m module args`, `python -c CODE args`):
same sys.argv, same __main__ module (__name__, __file__, __spec__), same
sys.path[0], same traceback text and exit status for an unhandled exception,
same message and status when the script or module does not exist.
The target's code runs with the hook on from its first line; the frames of
pyust's own start-up are hidden from the trace. Under pyust run (PYUST_START_TIMEOUT
set), that first line waits, bounded, for the session to record the process
(pyust._start_timeout).

The program must also start with the modules an untraced run has, plus the
fewest of pyust's own: their import cost belongs to the program's profile,
and import-order-sensitive code must see what it sees untraced. So this
module, pyust and the native hook are all the hook mode loads before the
program (not even threading: pyust waits for the program's import of it), with
pyust.__main__, which parses the hook options by hand (and which _forget_own_modules
drops when it was imported rather than run); the command line (argparse, subprocess, ...)
is imported only for the other commands, help and mistakes. No `from __future__ import`
either: it imports the __future__ module.
"""

import _io
import os
import sys

# python's own options, which may come before the program under pyust run (`pyust run --
# -X dev app.py`: they go to the program's interpreter): those taking a value, attached
# or not (-Xdev, -W error), and the flags, which may be combined (-Bu).
_PYTHON_VALUE_OPTIONS = ("-X", "-W")
_PYTHON_FLAGS = set("bBdEIOPqRsSuv")

# Keep pyust's own __main__ module alive once the program's replaces it in sys.modules, and
# pyust.__main__ (imported by the pyust command, the console script and pyust run's child)
# once _forget_own_modules drops it: their functions are running.
_pyust_main = None
_pyust_entry = None


class TargetError(Exception):
    """The target cannot be run (no such file, no such module): Python's own
    message for it, and Python's exit status."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class Target:
    def __init__(self, code, main_globals: dict, argv: list, path0: str):
        self.code = code
        self.main_globals = main_globals
        self.argv = argv
        self.path0 = path0


def split_python_options(argv: list) -> tuple:
    """(python's options, the program) of a target: `-X dev -B app.py args` ->
    (["-X", "dev", "-B"], ["app.py", "args"])."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word[:2] in _PYTHON_VALUE_OPTIONS:
            index += 1 if len(word) > 2 else 2
        elif len(word) > 1 and word[0] == "-" and set(word[1:]) <= _PYTHON_FLAGS:
            index += 1
        else:
            break
    return argv[:index], argv[index:]


def _forget_own_modules() -> None:
    """Modules that only pyust's way of starting the program imported go, so that the
    program starts with the modules `python PROGRAM` has:
    - from 3.13 on, `python -c CODE` imports linecache to keep CODE's source for
      tracebacks; pyust run starts its child that way (commands.run.child_command), but the
      command is pyust's: linecache goes when it holds nothing else;
    - the sitecustomize that traces the program's children (children.py) stays in
      sys.modules when the interpreter has none of its own: it goes here. (In the
      children themselves, no code of pyust's runs after site to drop it);
    - pyust.__main__, which the pyust command, the console script and pyust run's child
      import to reach run_hook (`python -m pyust` runs it as __main__ instead, which the
      program's __main__ replaces)."""
    global _pyust_entry
    linecache = sys.modules.get("linecache")
    if linecache is not None and all(getattr(key, "co_filename", key) == "<string>"
                                     for key in getattr(linecache, "cache", {"": None})):
        del sys.modules["linecache"]
    if getattr(sys.modules.get("sitecustomize"), "pyust_placeholder", False):
        del sys.modules["sitecustomize"]
    entry = sys.modules.pop("pyust.__main__", None)
    if entry is not None:
        _pyust_entry = entry
        package = sys.modules.get("pyust")
        if getattr(package, "__main__", None) is entry:
            del package.__main__


def run_hook(options: dict, target_argv: list, tally=None) -> int:
    """Run the target under the hook with options (pyust.__main__.parse_hook_options'),
    counting its events in tally's directory when given."""
    _forget_own_modules()
    python_options, program = split_python_options(target_argv)
    if python_options:
        # This interpreter runs already: its options were given before -m pyust.
        options_text = " ".join(python_options)
        print(f"pyust: error: {options_text}: python's options go before -m pyust "
              f"(python3 {options_text} -m pyust -- PROGRAM), or after `pyust run --`",
              file=sys.stderr)
        return 2
    import pyust

    try:
        target = prepare(target_argv)
    except TargetError as error:
        print(error, file=sys.stderr)
        return error.status
    # Imported by the .pth only (looked up, not imported: nothing to load).
    activation = sys.modules.get("pyust._activate")
    if activation is not None and activation.started_by_activation:
        pyust.stop()  # this command's options win over the environment's
    if tally is not None:
        pyust._tally_into(tally)

    # python:process's command line: sys.orig_argv, which prepare() made
    # `python PROGRAM ARGS`; before 3.10, that line made here.
    command = None if hasattr(sys, "orig_argv") else [sys.executable, *target_argv]

    def start():
        pyust.start(modules=options["modules"], exclude=options["exclude"],
                    c_calls=options["c_calls"], lines=options["lines"],
                    dormant=not options["no_dormant"], fast=options["fast"],
                    _hide_caller_stack=True, _command=command,
                    _start_wait=pyust._start_timeout())

    try:
        run(target, start)
    except pyust.TracerError as error:
        print(f"pyust: error: {error}", file=sys.stderr)
        return 1
    return 0


def _new_main(**attrs) -> dict:
    global _pyust_main
    main = type(sys)("__main__")
    main.__dict__.update(attrs)
    # An untraced __main__ has the builtins module itself, not its dict.
    main.__dict__["__builtins__"] = sys.modules["builtins"]
    _pyust_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    return main.__dict__


def _module_target(name: str, args: list) -> Target:
    import runpy  # `python -m` imports it too

    try:
        mod_name, spec, code = runpy._get_module_details(name)  # same lookup as python -m
    except ImportError as error:
        # runpy's own message and status for `python -m missing`.
        raise TargetError(f"{sys.executable}: {error}", 1) from None
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
    # Python runs the absolute file name (cwd joined, not normalised): in
    # __file__, co_filename and tracebacks.
    filename = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    if os.path.isdir(path) or (os.path.isfile(path) and _is_zip(path)):
        # A directory or zip application: its __main__ module, as python does.
        sys.path.insert(0, filename)
        try:
            target = _module_target("__main__", args)
        except TargetError:
            raise TargetError(f"{sys.executable}: can't find '__main__' module in "
                              f"{filename!r}", 1) from None
        target.argv[0] = path
        target.path0 = filename
        return target
    try:
        with _io.open_code(filename) as stream:
            source = stream.read()
    except OSError as error:
        program = (getattr(sys, "orig_argv", None) or [sys.executable])[0]
        raise TargetError(f"{program}: can't open file {filename!r}: "
                          f"[Errno {error.errno}] {error.strerror}", 2) from None
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        _reraise_as_untraced(error, None)
    loader_type = sys.modules["_frozen_importlib_external"].SourceFileLoader
    main_globals = _new_main(
        __name__="__main__",
        __file__=filename,
        __cached__=None,
        __loader__=loader_type("__main__", filename),
        __package__=None,
        __spec__=None,
    )
    # sys.path[0]: the directory of the script, symbolic links resolved.
    return Target(code, main_globals, [path, *args], os.path.dirname(os.path.realpath(path)))


def _code_target(source: str, args: list) -> Target:
    # As `python -c CODE`: the code is "<string>", __main__ has no __file__, and
    # sys.path[0] is ''.
    try:
        code = compile(source, "<string>", "exec", dont_inherit=True)
    except SyntaxError as error:
        _reraise_as_untraced(error, None)
    if sys.version_info >= (3, 13):
        # From 3.13, `python -c` keeps the code's source in linecache, so that its
        # tracebacks show the lines: as it does. Where linecache has a cache of code
        # objects (_interactive_cache, 3.13.5 and later), by the code (_register_code);
        # before that (3.13.0), under the name "<string>", where tracebacks look.
        import linecache

        register = getattr(linecache, "_register_code", None)
        if register is not None and hasattr(linecache, "_interactive_cache"):
            register(code, source, "<string>")
        else:
            linecache.cache["<string>"] = (len(source), None,
                                           [line + "\n" for line in source.splitlines()],
                                           "<string>")
    main_globals = _new_main(
        __name__="__main__",
        __loader__=sys.modules["_frozen_importlib"].BuiltinImporter,
        __package__=None,
        __spec__=None,
    )
    return Target(code, main_globals, ["-c", *args], "")


def _is_zip(path: str) -> bool:
    # What python asks: does the zip importer take it? (zipimport is loaded
    # at start-up; zipfile is not.)
    import zipimport

    try:
        zipimport.zipimporter(path)
    except zipimport.ZipImportError:
        return False
    return True


def prepare(argv: list) -> Target:
    """Build the target from `app.py args`, `-m module args` or `-c CODE args` (the
    option's value may be attached, as python takes it: -mjson.tool).

    Raises TargetError for a file or module that does not exist, or a -m or -c
    without its value.
    """
    original_args = sys.argv[1:]
    command = _command_path()
    if command and sys.path and sys.path[0] == os.path.dirname(command):
        del sys.path[0]  # the pyust command's directory, which `python PROGRAM` has not
    option = argv[0][:2]
    if option in ("-m", "-c"):
        if len(argv[0]) > 2:
            value, args = argv[0][2:], argv[1:]
        elif len(argv) > 1:
            value, args = argv[1], argv[2:]
        else:
            raise TargetError(f"Argument expected for the {option} option", 2)
        target = (_module_target if option == "-m" else _code_target)(value, args)
    else:
        target = _script_target(argv[0], argv[1:])
    sys.argv[:] = target.argv
    _set_orig_argv(original_args, argv, command)
    cwd = os.getcwd()
    if sys.path and sys.path[0] in ("", cwd):
        sys.path[0] = target.path0  # -m pyust put the cwd there, -c put ''
    elif not sys.path or sys.path[0] != target.path0:
        sys.path.insert(0, target.path0)
    return target


def _command_path():
    """The real path of the pyust command (pyust, pyust-3.13: an installed script) that
    started this process, or None for `python -m pyust` and `python -c`."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    if name == "pyust" or name.startswith("pyust-"):
        return os.path.realpath(sys.argv[0])
    return None


def _set_orig_argv(original_args: list, target_argv: list, command=None) -> None:
    """sys.orig_argv as `python [interpreter options] PROGRAM` would have it:
    pyust's part (-m pyust, -c CODE or the pyust command, and the hook options) taken
    out."""
    orig = getattr(sys, "orig_argv", None)
    if not orig or len(orig) < len(original_args) + 1:
        return
    head = orig[:len(orig) - len(original_args)]
    if head[-2:] == ["-m", "pyust"] or (len(head) >= 3 and head[-2] == "-c"):
        head = head[:-2]
    elif head[-1] == "-mpyust" or (command and os.path.realpath(head[-1]) == command):
        head = head[:-1]
    else:
        return
    sys.orig_argv = head + list(target_argv)


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
