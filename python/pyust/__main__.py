"""`python -m pyust`: see pyust.cli."""

import sys

from pyust.cli import main

if __name__ == "__main__":
    sys.exit(main())
