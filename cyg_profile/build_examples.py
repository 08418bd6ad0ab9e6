"""Builds the example extension modules of cyg_profile/examples for the
interpreter that runs this script, into a directory:

    PYTHON cyg_profile/build_examples.py OUTDIR [--cython CYTHON] [--cc CC]

- foo2: Cython (foo2.pyx) + C (helper.c), instrumented with pyust's cflags;
- cext: a plain C extension, instrumented with pyust's cflags;
- foo3: Cython with profile=True and -DCYTHON_TRACE=1, not instrumented: its
  functions reach pyust's hook as Python frames.

The C code is compiled with `CC -shared -fPIC` against this interpreter's
headers (sysconfig), and named with its extension suffix. The flags come from
the source tree's python/pyust/native.py.
Prints the modules built; exits 1, with the compiler's output, when a step fails.
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


def _run(command: list) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(f"build_examples: failed: {' '.join(command)}\n"
                         f"{result.stdout}{result.stderr}")
        raise SystemExit(1)


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


def build(out: Path, cython: str = "cython3", cc: str = "gcc") -> dict:
    """Builds the three modules into out; returns {name: path}."""
    out.mkdir(parents=True, exist_ok=True)
    built = {}
    foo2_c = _cythonize(cython, EXAMPLES / "foo2.pyx", out)
    built["foo2"] = _link(cc, "foo2", [foo2_c, EXAMPLES / "helper.c"], out,
                          native.cflags(cython=True))
    built["cext"] = _link(cc, "cext", [EXAMPLES / "cext.c"], out, native.cflags())
    foo3_c = _cythonize(cython, EXAMPLES / "foo3.pyx", out, "profile=True")
    built["foo3"] = _link(cc, "foo3", [foo3_c], out, ["-DCYTHON_TRACE=1", "-g"])
    return built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="directory for the built modules")
    parser.add_argument("--cython", default=shutil.which("cython3") or "cython",
                        help="the cython command (default: cython3)")
    parser.add_argument("--cc", default=os.environ.get("CC", "gcc"),
                        help="the C compiler (default: $CC or gcc)")
    args = parser.parse_args()
    for name, path in build(Path(args.out), args.cython, args.cc).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
