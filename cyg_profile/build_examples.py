"""Builds the example extension modules of cyg_profile/examples for the
interpreter that runs this script, into a directory:

    PYTHON cyg_profile/build_examples.py OUTDIR [--cython CYTHON] [--cc CC] [--cxx CXX]

- foo2: Cython (foo2.pyx) + C (helper.c), instrumented with pyust's cflags;
- cext: a plain C extension, instrumented with pyust's cflags;
- cppext: a C++ extension (cppext.cpp), instrumented with pyust's cflags;
- foo3: Cython with profile=True and -DCYTHON_TRACE=1, not instrumented: its
  functions reach pyust's hook as Python frames.

The C code is compiled with `CC -shared -fPIC` against this interpreter's
headers (sysconfig), and named with its extension suffix. The flags come from
the source tree's python/pyust/native.py.
Prints the modules built; a module that fails is printed as FAILED, with the
compiler's output on standard error, and the exit status is 1 (0 with
--keep-going). Debian 12's Cython 0.29.32 writes C that does not compile
against Python 3.12+ headers: use Cython 0.29.36 or 3.x there (--cython).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "examples"



def _load_native():
    # The source tree's pyust/native.py, whatever pyust this interpreter has installed.
    import importlib.util

    spec = importlib.util.spec_from_file_location("_pyust_native",
                                                  HERE.parent / "python" / "pyust" / "native.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


native = _load_native()


class BuildError(Exception):
    """A step failed; the message holds the command and its output."""


def _run(command: list) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"failed: {' '.join(command)}\n{result.stdout}{result.stderr}")


def _cythonize(cython: str, source: Path, out: Path, *directives: str) -> Path:
    target = out / (source.stem + ".c")
    command = [cython, "-3", "-o", str(target)]
    for directive in directives:
        command += ["-X", directive]
    _run(command + [str(source)])
    return target


def _link(cc: str, name: str, sources: list, out: Path, flags: list) -> Path:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = out / (name + suffix)
    includes = [f"-I{d}" for d in native.python_include_dirs()] + [f"-I{EXAMPLES}"]
    _run([cc, "-shared", "-fPIC", "-O2", *includes, *flags, "-o", str(target),
          *map(str, sources)])
    return target


def build(out: Path, cython: str = "cython3", cc: str = "gcc", cxx: str = "g++") -> tuple:
    """Builds the four modules into out, each on its own: ({name: path}, {name: error})."""
    out.mkdir(parents=True, exist_ok=True)
    steps = {
        "foo2": lambda: _link(cc, "foo2", [_cythonize(cython, EXAMPLES / "foo2.pyx", out),
                                           EXAMPLES / "helper.c"], out,
                              native.cflags(cython=True)),
        "cext": lambda: _link(cc, "cext", [EXAMPLES / "cext.c"], out, native.cflags()),
        "cppext": lambda: _link(cxx, "cppext", [EXAMPLES / "cppext.cpp"], out, native.cflags()),
        "foo3": lambda: _link(cc, "foo3",
                              [_cythonize(cython, EXAMPLES / "foo3.pyx", out, "profile=True")],
                              out, ["-DCYTHON_TRACE=1", "-g"]),
    }
    built, failed = {}, {}
    for name, step in steps.items():
        try:
            built[name] = step()
        except BuildError as error:
            failed[name] = str(error)
    return built, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="directory for the built modules")
    parser.add_argument("--cython", default=shutil.which("cython3") or "cython",
                        help="the cython command (default: cython3)")
    parser.add_argument("--cc", default=os.environ.get("CC", "gcc"),
                        help="the C compiler (default: $CC or gcc)")
    parser.add_argument("--cxx", default=os.environ.get("CXX", "g++"),
                        help="the C++ compiler (default: $CXX or g++)")
    parser.add_argument("--keep-going", action="store_true",
                        help="exit 0 even when a module fails (it is printed as FAILED)")
    args = parser.parse_args()
    built, failed = build(Path(args.out), args.cython, args.cc, args.cxx)
    for name, path in built.items():
        print(f"{name}: {path}")
    for name, error in failed.items():
        print(f"{name}: FAILED")
        sys.stderr.write(f"build_examples: {name}: {error}\n")
    return 1 if failed and not args.keep_going else 0


if __name__ == "__main__":
    sys.exit(main())
