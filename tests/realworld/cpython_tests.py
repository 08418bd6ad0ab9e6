#!/usr/bin/env python3
"""CPython's own tests under pyust run: does tracing change what a program sees?

    python3 tests/realworld/cpython_tests.py [--python PATH] [--pyust-path DIR]
                                             [--mode fast|standard|both] [TEST ...]

Runs `PYTHON -m test TESTS` untraced, then under `PYTHON -m pyust run [--fast] -o TMP --`
in each mode asked for, and prints the test files whose result differs from the untraced
run. CPython's tests of frames, generators, coroutines, tracing, threads and the rest ask
more of a tracer than any program of ours: a trace function, a debugger or a garbage
collector callback sees what pyust leaves behind. Exit status 0 when every mode fails the
same files as untraced, 1 when one differs, 2 for a usage error.

The default tests are the ones listed in TESTS below that the interpreter has (Debian's
3.11 needs libpython3.11-testsuite; pyenv's builds carry theirs). Some fail under any
tool using sys.monitoring, as under cProfile: test_monitoring (3.12+, it checks that no
other tool is active), test_pdb on 3.13. The traces (tens of millions of events, some GB
in the standard mode) go to a temporary directory, deleted after each run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))

from overhead import default_pyust_path  # noqa: E402  (the bench folder is not a package)

TESTS = (
    "test_generators test_coroutines test_asyncgen test_contextlib test_contextlib_async "
    "test_sys_setprofile test_sys_settrace test_sys test_descr test_class test_exceptions "
    "test_itertools test_functools test_dataclasses test_enum test_typing test_inspect "
    "test_traceback test_scope test_with test_yield_from test_bdb test_cprofile test_profile "
    "test_trace test_monitoring test_frame test_weakref test_json test_re test_collections "
    "test_threading test_raise test_keywordonlyarg test_extcall test_property test_super "
    "test_dict test_list test_unpack_ex test_patma test_exception_group test_except_star "
    "test_pdb").split()

# regrtest's summary: "3 tests failed:" then the names, indented, up to a blank line.
FAILED = re.compile(r"^\d+ tests? (failed|crashed|altered the execution environment)"
                    r"( again)?:\n((?:    .*\n)+)", re.MULTILINE)


def failed_files(output: str) -> set:
    """The test files regrtest's summary lists as failed (or crashed)."""
    names = set()
    for match in FAILED.finditer(output):
        if match.group(1) != "altered the execution environment":
            names.update(match.group(3).split())
    return names


def available(python: str, tests: list) -> list:
    """The tests of the list that this interpreter's test package has."""
    probe = ("import importlib.util, sys\n"
             "print(' '.join(t for t in sys.argv[1:] "
             "if importlib.util.find_spec('test.' + t) is not None))")
    done = subprocess.run([python, "-c", probe, *tests], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cpython_tests: {python} cannot look for its tests: "
                         f"{done.stderr.strip()}")
    return done.stdout.split()


def run(command: list, env: dict, log: str) -> set:
    """Runs regrtest; its output goes to log; the files it reports failed."""
    with open(log, "w") as out:
        subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                       stdin=subprocess.DEVNULL)
    with open(log) as out:
        text = out.read()
    if "== Tests result:" not in text:
        raise SystemExit(f"cpython_tests: no test results from {' '.join(command[:6])} ...: "
                         f"see {log}")
    return failed_files(text)


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(
        description="CPython's own tests untraced and under pyust run: the files whose "
                    "result differs.")
    parser.add_argument("tests", nargs="*", metavar="TEST",
                        help="regrtest names (default: a list of 44 files about frames, "
                             "generators, tracing, threads, ...)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter under test (default: this one)")
    parser.add_argument("--pyust-path", default=None,
                        help="put in front of PYTHONPATH (default: scripts/setup's build for "
                             "that interpreter, else the installed pyust)")
    parser.add_argument("--mode", choices=("fast", "standard", "both"), default="both")
    parser.add_argument("--logs", default=None,
                        help="keep regrtest's output of each run in this directory")
    args = parser.parse_args(argv)
    done = subprocess.run([args.python, "-c", "import sys; print(*sys.version_info[:2])"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        parser.error(f"--python {args.python} does not run")
    version = tuple(int(part) for part in done.stdout.split())
    path = (args.pyust_path if args.pyust_path is not None
            else default_pyust_path(args.python, version))
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"]
                                    if env.get("PYTHONPATH") else "")
    tests = available(args.python, args.tests or list(TESTS))
    if not tests:
        parser.error(f"{args.python} has none of these tests (Debian: "
                     f"libpython3.{version[1]}-testsuite)")
    modes = ["fast", "standard"] if args.mode == "both" else [args.mode]
    with tempfile.TemporaryDirectory(prefix="pyust-cpython-tests-") as scratch:
        logs = args.logs or scratch
        os.makedirs(logs, exist_ok=True)
        print(f"{args.python} ({'.'.join(map(str, version))}), pyust from "
              f"{path or 'the installed package'}: {len(tests)} test files", flush=True)
        plain = run([args.python, "-m", "test", *tests], env,
                    os.path.join(logs, "untraced.log"))
        print(f"untraced: {len(plain)} failed {' '.join(sorted(plain))}", flush=True)
        differs = False
        for mode in modes:
            trace = os.path.join(scratch, f"trace-{mode}")
            fast = ["--fast"] if mode == "fast" else []
            traced = run([args.python, "-m", "pyust", "run", *fast, "-o", trace, "--", "-m",
                          "test", *tests], env, os.path.join(logs, f"{mode}.log"))
            subprocess.run(["rm", "-rf", trace])
            only = sorted(traced - plain)
            fixed = sorted(plain - traced)
            differs = differs or bool(only or fixed)
            print(f"pyust run, {mode} mode: {len(traced)} failed; only under pyust: "
                  f"{' '.join(only) or 'none'}; only untraced: {' '.join(fixed) or 'none'}",
                  flush=True)
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
