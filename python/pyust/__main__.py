"""`python -m pyust`: see pyust.cli.

The hook mode (`python -m pyust [hook options] -- PROGRAM`) runs the program
in this interpreter: pyust._runner parses its options, and pyust.cli (with
argparse, subprocess, ...) is imported only for the other commands, so that the
program starts with the modules an untraced run has.
"""

import sys

from pyust._runner import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
