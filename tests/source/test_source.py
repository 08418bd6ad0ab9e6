"""The sources keep STYLE.md's conventions that tools can check: every C and C++ file laid out
by clang-format (.clang-format at the root; tracepoints/ is LTTng's macro language and opts out),
no Python file with what pyflakes finds (unused imports and names, undefined names), and no
import circle in the pyust package (python/pyust): its imports, at a module's top or inside a
function, go one way. No product source file has more than 700 lines. Every include of one of our
headers names its path from src/, the build's one include directory for them (src/meson.build):
"hook/state.hpp", not "state.hpp" found through a folder's include path.

The layout is the one clang-format 14 (Debian 12's) makes: other versions lay the same
.clang-format out differently (19 and 21 move hundreds of lines), so the layout is checked only
with version 14 (clang-format-14, or a clang-format whose major version is 14) and the test
skips, naming the version it found, elsewhere.

    /usr/bin/python3 -m pytest tests/source
"""

import ast
import os
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


# The most lines one product source file may have: past it, a file does more than one job
# (issue 28). Tests, benchmarks and documents are not product sources.
MAX_LINES = 700
PRODUCT_SOURCES = ("src/*", "tracepoints/*", "python/*", "cyg_profile/*", "scripts/*")


def test_no_product_source_file_is_over_the_line_limit():
    files = [name for name in tracked(*PRODUCT_SOURCES)
             if name.endswith((".cpp", ".hpp", ".h", ".c", ".py", ".in", ".js", ".css", ".pyx"))
             or "/scripts/" in name]
    assert len(files) > 100
    long = {os.path.relpath(name, ROOT): count for name in files
            if (count := len(Path(name).read_bytes().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"


def module_name(path, top):
    """The dotted name of the module in path, a file under top (python/pyust/commands/run.py
    -> pyust.commands.run; a package's __init__.py names the package)."""
    parts = list(path.relative_to(top.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(top):
    """{module: the modules of the package in directory top that it imports}, from every import
    statement of its source: at its top, in a function (a lazy import closes a circle as
    surely, once it runs), under a condition. `from P import x` imports P and, when x is a
    module of P, P.x; `import a.b` imports a and a.b."""
    modules = {module_name(path, top): path for path in sorted(top.rglob("*.py"))}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    imported.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                parts = source.split(".")
                imported.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
                imported.update(f"{source}.{alias.name}" for alias in node.names)
        graph[name] = sorted(imported & modules.keys() - {name})
    return graph


def import_circles(graph):
    """Each circle of graph, as the list of its modules from its first (by name) back to it."""
    circles = set()
    done = set()

    def visit(module, path):
        for target in graph[module]:
            if target in path:
                circle = path[path.index(target):]
                first = circle.index(min(circle))
                circles.add(tuple(circle[first:] + circle[:first]))
            elif target not in done:
                visit(target, path + [target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    return [list(circle) + [circle[0]] for circle in sorted(circles)]


def test_import_circles_are_found_in_lazy_and_relative_imports(tmp_path):
    top = tmp_path / "pkg"
    (top / "sub").mkdir(parents=True)
    (top / "__init__.py").write_text("")
    (top / "sub" / "__init__.py").write_text("")
    (top / "a.py").write_text("from .sub import b\n")
    (top / "sub" / "b.py").write_text("import os\n\ndef f():\n    from .. import a\n")
    (top / "c.py").write_text("import pkg.a\nfrom pkg import sub\n")
    graph = import_graph(top)
    assert graph["pkg.c"] == ["pkg", "pkg.a", "pkg.sub"]
    assert import_circles(graph) == [["pkg.a", "pkg.sub.b", "pkg.a"]]
    (top / "sub" / "b.py").write_text("import os\n")
    assert import_circles(import_graph(top)) == []


def test_python_package_has_no_import_circle():
    """One direction only (pyust.__main__ -> pyust._runner, pyust.cli -> the commands): a
    circle makes a module's import order decide which names exist when, and hides which
    module is the way in."""
    graph = import_graph(ROOT / "python" / "pyust")
    assert len(graph) > 30 and "pyust.commands.run" in graph
    circles = import_circles(graph)
    assert not circles, "import circles in python/pyust: " + "; ".join(
        " -> ".join(circle) for circle in circles)


SRC = ROOT / "src"
# The provider's headers are named from tracepoints/, the include directory of their own.
TRACEPOINTS = ROOT / "tracepoints"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def misnamed_includes(files):
    """The `#include "NAME"` lines of these files that name one of our headers (a file of src/ or
    tracepoints/, or a generated .inc) other than by its path from src/ or tracepoints/; a
    generated header is named by its path from src/ in the build tree ("analysis/x.inc" where
    src/analysis makes it). Each as "FILE:LINE: NAME (path: CANDIDATES)"."""
    ours = {}
    for folder in (SRC, TRACEPOINTS):
        for path in folder.rglob("*"):
            if path.is_file():
                ours.setdefault(path.name, []).append(str(path.relative_to(folder)))
    found = []
    for name in files:
        for number, line in enumerate(Path(name).read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if match is None:
                continue
            included = match.group(1)
            head, _, base = included.rpartition("/")
            if (SRC / included).is_file() or (TRACEPOINTS / included).is_file():
                continue
            if base.endswith(".inc") and head and (SRC / head).is_dir():
                continue
            if base in ours or base.endswith(".inc"):
                found.append("%s:%d: %s (path: %s)" % (
                    Path(name).relative_to(ROOT), number, included,
                    " or ".join(ours.get(base, ["FOLDER/" + base + ", FOLDER making it"]))))
    return found


def test_our_headers_are_included_by_their_path_from_src():
    files = tracked("*.c", "*.h", "*.cpp", "*.hpp")
    assert len(files) > 40
    found = misnamed_includes(files)
    assert not found, ("name these headers by their path from src/ (or tracepoints/):\n"
                       + "\n".join(found))
