"""`python -m pyust cflags`: the compiler flags that instrument an extension module for
`pyust run --native` (the flags themselves: pyust.native)."""

from __future__ import annotations

import argparse

from .. import args as cli_args, native


def main(argv: list) -> int:
    """`python -m pyust cflags [--cython]`: print the flags on one line."""
    parser = cli_args.Parser(
        prog=cli_args.program("cflags"), man="pyust-cflags",
        description=(
            "Print the compiler flags that instrument an extension module's own "
            "functions for `pyust run --native` (-finstrument-functions), but not the "
            "inline functions of this interpreter's headers nor of /usr/include. "
            "Use them with the interpreter that will run the module."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=("setuptools:  Extension(..., extra_compile_args=FLAGS)\n"
                "meson:       c_args: FLAGS in the extension_module()\n"
                f"shell:       CFLAGS=\"$({cli_args.program('cflags')})\" pip install ."),
    )
    parser.add_argument("--cython", action="store_true",
                        help="also leave out Cython's own helper functions (__Pyx_*, and its "
                             "code-object cache, function type and metaclass)")
    args = parser.parse_args(argv)
    print(" ".join(native.cflags(cython=args.cython)))
    return 0
