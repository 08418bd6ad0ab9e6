"""The way into pyust: `python -m pyust`, the pyust command (python/command.py.in), the
console script of pyproject.toml and pyust run's child all call main(), which picks the
hook mode or the command line.

The hook mode (`python -m pyust [hook options] -- PROGRAM`) runs the program in this
interpreter: this module parses its options by hand and pyust._runner runs it, and pyust.cli
(with argparse, subprocess, ...) is imported only for the commands, --help and mistakes, so
that the program starts with the modules an untraced run has. For that, this module imports
nothing at its top but sys (no `from __future__ import` either: it imports the __future__
module), and pyust._runner forgets it (as pyust.__main__, when it was imported rather than
run) before the program starts.

The imports go one way: this module imports pyust._runner and pyust.cli, pyust.cli the
commands, and none of them imports this module; the commands are named here alone, and
pyust.cli reads them from the table main() hands it.
"""

import sys

# The commands of `pyust COMMAND`: name: (module of pyust.commands, its function, what it
# does, as `pyust --help` lists it). Any other first word starts the hook mode.
COMMANDS = {
    "run": ("run", "main", "create an LTTng session, trace the program into it, print a "
                           "summary"),
    "attach": ("attach", "main", "trace a Python process that is already running (pyust "
                                 "attach PID)"),
    "report": ("report", "main", "profiles, call trees, flame graphs of a trace (through "
                                 "babeltrace2)"),
    "top": ("top", "main", "the hottest functions of a live session, refreshed every second"),
    "enable": ("activation", "enable_main", "trace every interpreter of this environment when "
                                            "a variable is set"),
    "disable": ("activation", "disable_main", "undo enable"),
    "cflags": ("cflags", "main", "compiler flags that instrument an extension for run "
                                 "--native"),
    "plugin-path": ("plugin_path", "main", "the directory of pyust's babeltrace2 plugin, for "
                                           "babeltrace2 --plugin-path"),
}

# The hook options, as pyust(1) documents them: flags, and options with a value (attached
# with = or the next word).
_HOOK_FLAGS = {"--c-calls": "c_calls", "--lines": "lines", "--fast": "fast",
               "--no-dormant": "no_dormant"}
_HOOK_VALUES = ("--modules", "--exclude")


def parse_hook_options(argv: list):
    """(options, target argv) for hook options spelled exactly as documented,
    or None for anything else (--help, abbreviations, mistakes, no program):
    pyust.cli's parser takes those, with its messages."""
    options = {"modules": [], "exclude": [], "c_calls": False, "lines": False, "fast": False,
               "no_dormant": False}
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            target = argv[index + 1:]
            break
        if not word.startswith("-"):
            target = argv[index:]
            break
        if word in _HOOK_FLAGS:
            options[_HOOK_FLAGS[word]] = True
            index += 1
            continue
        name, equals, value = word.partition("=")
        if name not in _HOOK_VALUES:
            return None
        if not equals:
            index += 1
            if index == len(argv) or argv[index].startswith("-"):
                return None
            value = argv[index]
        options[name[2:]].append(value)
        index += 1
    else:
        return None
    return (options, target) if target else None


def main(argv=None, tally=None) -> int:
    """`pyust ARGS` (argv None: sys.argv[1:]): a command, or the hook mode when the hook
    options are spelled exactly as documented, or else pyust.cli, whose parser answers
    --help and mistakes with its messages. In the hook mode the program's own exceptions
    (KeyboardInterrupt included) propagate exactly as they would untraced. tally: pyust
    run's directory where the process counts its events (pyust.tally)."""
    if argv is None:
        argv = sys.argv[1:]
    parsed = None if argv and argv[0] in COMMANDS else parse_hook_options(argv)
    if parsed is not None:
        from pyust import _runner

        return _runner.run_hook(*parsed, tally=tally)
    from pyust import cli

    return cli.main(argv, COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
