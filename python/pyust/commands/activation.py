"""`python -m pyust enable [VAR]` and `python -m pyust disable`: the .pth activation
(pyust.pth writes and removes the file)."""

from __future__ import annotations

from .. import args as cli_args, pth


def enable_main(argv: list) -> int:
    parser = cli_args.Parser(
        prog=cli_args.program("enable"), man="pyust-enable",
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


def disable_main(argv: list) -> int:
    parser = cli_args.Parser(prog=cli_args.program("disable"), man="pyust-enable",
                     description="Remove the .pth file that `pyust enable` wrote.")
    parser.parse_args(argv)
    path = pth.disable()
    print(f"pyust: removed {path}" if path else "pyust: was not enabled (no .pth file)")
    return 0
