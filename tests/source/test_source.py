"""The sources keep STYLE.md's conventions that tools can check: every C and C++ file laid out
by clang-format (.clang-format at the root; tracepoints/ is LTTng's macro language and opts out),
and no Python file with what pyflakes finds (unused imports and names, undefined names).

    /usr/bin/python3 -m pytest tests/source
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tracked(*patterns):
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", *patterns], capture_output=True,
                            text=True, timeout=60)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: %s" % listed.stderr.strip())
    return [str(ROOT / name) for name in listed.stdout.split()]


def test_c_and_cpp_sources_are_clang_formatted():
    if shutil.which("clang-format") is None:
        pytest.fail("clang-format is missing: scripts/setup installs it")
    files = [f for f in tracked("*.c", "*.h", "*.cpp", "*.hpp")
             if not f.startswith(str(ROOT / "tracepoints") + "/")]
    assert len(files) > 40
    result = subprocess.run(["clang-format", "--dry-run", "--Werror", *files],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, ("run clang-format -i on these:\n" + result.stderr[-4000:])


def test_python_sources_pass_pyflakes():
    files = tracked("*.py")
    assert len(files) > 40
    result = subprocess.run([sys.executable, "-m", "pyflakes", *files], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
