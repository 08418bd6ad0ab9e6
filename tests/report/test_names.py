"""Names that do not lie (issue 12), on real third-party code traced by `pyust run`: attrs'
generated classes (code compiled with an empty file name), numpy's dispatch wrappers (one
`def` renamed per function), jinja2's templates (code exec'd without a module). Each
program's call counts are compared with cProfile's on the same program.

Debian packages: python3-attr, python3-numpy, python3-jinja2 (scripts/setup installs them).
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap

import pytest

from pyusttest.environment import PYTHON, RUN_TIMEOUT, child_env
from pyusttest.report import ok, trace_program

# Runs a program under cProfile and prints {"file\0line\0name": calls} as JSON. From
# getstats(), per code object: pstats keeps one of the code objects that share a
# (file, line, name) key (attrs compiles many "" <module>s) and drops the others' counts.
CPROFILE = """\
import cProfile, json, runpy, sys
profiler = cProfile.Profile()
profiler.enable()
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
finally:
    profiler.disable()
counts = {}
for entry in profiler.getstats():
    code = entry.code
    if not isinstance(code, str):
        key = "%s\\0%d\\0%s" % (code.co_filename, code.co_firstlineno, code.co_name)
        counts[key] = counts.get(key, 0) + entry.callcount
print(json.dumps(counts))
"""


def needs(module: str):
    """Skips unless the interpreter under test has module (a Debian package)."""
    if subprocess.run([PYTHON, "-c", "import " + module], capture_output=True).returncode:
        pytest.skip(f"{module} is not installed for {PYTHON} (Debian: python3-{module})")


def cprofile_counts(program, cwd) -> dict:
    """cProfile's calls per (file, first line, co_name) of program."""
    result = subprocess.run([PYTHON, "-c", CPROFILE, str(program)], capture_output=True,
                            text=True, timeout=RUN_TIMEOUT, env=child_env(), cwd=cwd)
    assert result.returncode == 0, result.stderr
    counts = {}
    for key, calls in json.loads(result.stdout.splitlines()[-1]).items():
        file, line, name = key.split("\0")
        counts[(file, int(line), name)] = calls
    return counts


ROW = re.compile(r"^\s*(\d+)\s+\S+\s+\S+\s+\S+\s\s(.+)$")


def profile(traced) -> dict:
    """The profile of the traced program's process: {(label, location): calls}, summed over
    rows of the same label and location (code objects of one source compiled again)."""
    rows = {}
    for line in ok(traced.path, "--pid", traced.pid, "--limit", "0").splitlines():
        match = ROW.match(line)
        if match:
            key = tuple(match.group(2).rsplit("  ", 1))
            rows[key] = rows.get(key, 0) + int(match.group(1))
    return rows


def counts_by_code(rows: dict) -> dict:
    """{(file, first line, co_name): calls} of profile() rows, keyed like cProfile's: the
    name is the [co_name] of renamed code, else the qualified name's last part."""
    counts = {}
    for (label, location), calls in rows.items():
        if not re.search(r":\d+$", location):
            continue  # C functions, unregistered code
        file, line = location.rsplit(":", 1)
        qualname = label.rsplit(":", 1)[1]
        bracket = re.search(r"\[([^\]]+)\]$", qualname)
        name = bracket.group(1) if bracket else qualname.split(".")[-1]
        key = ("" if file == "<no file name>" else file, int(line), name)
        counts[key] = counts.get(key, 0) + calls
    return counts


def compare_with_cprofile(traced, keep) -> dict:
    """Asserts that pyust and cProfile count the same calls for every code cProfile saw
    whose file passes keep; returns those counts."""
    mine = counts_by_code(profile(traced))
    theirs = {key: calls for key, calls in
              cprofile_counts(traced.program, traced.program.parent).items() if keep(key[0])}
    assert theirs, "cProfile saw none of the code under test"
    assert {key: mine.get(key) for key in theirs} == theirs
    return theirs


ATTRS_PROGRAM = """\
import attr

@attr.s
class Point:
    x = attr.ib()
    y = attr.ib()

def main():
    for i in range(3):
        assert Point(i, i + 1) == Point(i, i + 1)
    namespace = {}
    exec(compile("def made(a):\\n    return a + 1\\n", "", "exec"), namespace)
    for i in range(5):
        namespace["made"](i)

main()
"""


def test_empty_file_name_is_registered_code(tmp_path):
    """attrs compiles its generated classes with an empty file name: such code is named
    (the file placeholder), never (unregistered), in the report and in babeltrace2's dump."""
    needs("attr")
    traced = trace_program(tmp_path, ATTRS_PROGRAM)
    rows = profile(traced)
    assert rows[("<no file name>:made", "<no file name>:1")] == 5
    assert not [key for key in rows if key[1] in ("(unregistered)", "(named by its call)")]
    # The attrs classes built at attrs' own import, compiled with "" too.
    assert any(label.startswith("<no file name>:") and label != "<no file name>:made"
               for label, _ in rows)
    counts = compare_with_cprofile(
        traced, lambda file: file in ("", str(traced.program)) or file.startswith("<attrs"))
    assert counts[("", 1, "made")] == 5
    # attrs names the file of Point's generated methods "<attrs generated init
    # __main__.Point>" (22.2, Debian 12), or "<attrs generated methods __main__.Point>" (26.1).
    inits = {file: calls for (file, _, name), calls in counts.items()
             if name == "__init__" and file.startswith("<attrs generated ")
             and file.endswith(" __main__.Point>")}
    assert list(inits.values()) == [6], counts
    # babeltrace2 2.0.4 prints an empty string field as the value it had in an earlier event:
    # the hook records the placeholder, so the dump is true.
    dump = subprocess.run(["babeltrace2", str(traced.path)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT)
    assert dump.returncode == 0, dump.stderr
    made = [line for line in dump.stdout.splitlines()
            if "python:code:" in line and 'qualname = "made"' in line
            and "vpid = %d," % traced.pid in line]
    assert len(made) == 1 and 'file = "<no file name>"' in made[0], made


NUMPY_PROGRAM = """\
import numpy as np

def main():
    a = np.arange(10)
    b = np.arange(5)
    for _ in range(3):
        np.concatenate([a, b])
    out = np.empty(10)
    for _ in range(2):
        np.copyto(out, a)

main()
"""


def test_numpy_dispatch_wrappers_are_told_apart(tmp_path):
    """numpy 1.24 renames one `def public_api` per function (co_name): each reads
    public_api[NAME], with cProfile's call counts."""
    needs("numpy")
    traced = trace_program(tmp_path, NUMPY_PROGRAM)
    labels = [label for label, _ in profile(traced) if ".public_api" in label]
    if not labels:
        pytest.skip("this numpy dispatches in C (1.25+): no Python wrapper to name")
    assert all(re.search(r"\.public_api\[\w+\]$", label) for label in labels), labels
    assert len(labels) == len(set(labels))
    counts = compare_with_cprofile(traced, lambda file: file == "<__array_function__ internals>")
    concatenate = [key for key in counts if key[2] == "concatenate"]
    copyto = [key for key in counts if key[2] == "copyto"]
    assert len(concatenate) == 1 and counts[concatenate[0]] >= 3
    assert len(copyto) == 1 and counts[copyto[0]] >= 2
    assert any(label.endswith(".public_api[concatenate]") for label in labels)
    assert any(label.endswith(".public_api[copyto]") for label in labels)


JINJA_PROGRAM = """\
import os
import jinja2

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(here, "templates")))
    page = env.get_template("page.html")
    for _ in range(3):
        page.render(items=range(4))
    exec(compile("def render():\\n    return 1\\n", "template.html", "exec"), namespace := {})
    namespace["render"]()

main()
"""


def test_code_without_module_is_named_by_its_file(tmp_path):
    """jinja2 runs each template's code without a module (`?`): the rows tell the templates
    apart by file, and count what cProfile counts."""
    needs("jinja2")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "page.html").write_text(
        "<ul>{% for x in items %}{% include 'item.html' %}{% endfor %}</ul>")
    (tmp_path / "templates" / "item.html").write_text("<li>{{ x }}</li>")
    traced = trace_program(tmp_path, textwrap.dedent(JINJA_PROGRAM))
    rows = {label: calls for (label, _), calls in profile(traced).items()}
    page = str(tmp_path / "templates" / "page.html")
    item = str(tmp_path / "templates" / "item.html")
    # A template's root is a generator: every resumption is a call, for cProfile too.
    assert rows[page + ":root"] >= 3
    assert rows[item + ":root"] >= 12
    assert rows["template.html:render"] == 1
    assert not [label for label in rows if label.startswith("?:")]
    compare_with_cprofile(traced, lambda file: file.endswith(".html"))
