"""The sources keep STYLE.md's conventions that tools can check: every C and C++ file laid out
by clang-format (.clang-format at the root; tracepoints/ is LTTng's macro language and opts out),
and no Python file with what pyflakes finds (unused imports and names, undefined names).

The layout is the one clang-format 14 (Debian 12's) makes: other versions lay the same
.clang-format out differently (19 and 21 move hundreds of lines), so the layout is checked only
with version 14 (clang-format-14, or a clang-format whose major version is 14) and the test
skips, naming the version it found, elsewhere.

    /usr/bin/python3 -m pytest tests/source
"""

import re
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


# The clang-format major version whose layout the sources keep.
CLANG_FORMAT_MAJOR = 14


def clang_format_major(program):
    """The major version of a clang-format program ("Debian clang-format version 14.0.6"), or
    None when it does not say."""
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except OSError:
        return None
    found = re.search(r"clang-format version (\d+)\.", out)
    return int(found.group(1)) if found else None


def pinned_clang_format():
    """The clang-format of the pinned major version: (program, None), or (None, why not)."""
    seen = []
    for name in ("clang-format-%d" % CLANG_FORMAT_MAJOR, "clang-format"):
        program = shutil.which(name)
        if program is None:
            continue
        major = clang_format_major(program)
        if major == CLANG_FORMAT_MAJOR:
            return program, None
        seen.append("%s is version %s" % (name, major if major is not None else "unknown"))
    if not seen:
        return None, "clang-format is missing"
    return None, ", ".join(seen)


def test_clang_format_major_is_read_from_its_version_line():
    assert clang_format_major("/bin/false") is None
    if shutil.which("clang-format") is None:
        pytest.skip("clang-format is missing")
    assert isinstance(clang_format_major(shutil.which("clang-format")), int)


def test_c_and_cpp_sources_are_clang_formatted():
    program, why_not = pinned_clang_format()
    if program is None:
        debian = Path("/etc/debian_version")
        if (why_not == "clang-format is missing" and debian.exists()
                and debian.read_text(errors="replace").startswith("12.")):
            pytest.fail("clang-format is missing: scripts/setup installs it")
        pytest.skip("the layout is clang-format %d's and %s: checked only with version %d "
                    "(apt-get install clang-format-%d where the release has it)"
                    % (CLANG_FORMAT_MAJOR, why_not, CLANG_FORMAT_MAJOR, CLANG_FORMAT_MAJOR))
    files = [f for f in tracked("*.c", "*.h", "*.cpp", "*.hpp")
             if not f.startswith(str(ROOT / "tracepoints") + "/")]
    assert len(files) > 40
    result = subprocess.run([program, "--dry-run", "--Werror", *files],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, ("run %s -i on these:\n" % program) + result.stderr[-4000:]


def test_python_sources_pass_pyflakes():
    files = tracked("*.py")
    assert len(files) > 40
    result = subprocess.run([sys.executable, "-m", "pyflakes", *files], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
