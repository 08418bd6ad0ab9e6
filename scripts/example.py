"""The example `scripts/setup` traces: seed 004's foo/bar/baz, and a little
more work so that the trace shows calls, returns and an exception."""

import json


def baz():
    return json.dumps({"answer": 42})


def bar():
    return baz()


def foo():
    bar()
    try:
        int("not a number")
    except ValueError:
        pass


if __name__ == "__main__":
    foo()
    print("example done")
