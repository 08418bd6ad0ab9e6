"""Sub-interpreters (issue 7): pyust's native hook holds per-process state, so
it traces the main interpreter only. Starting it in a sub-interpreter raises
pyust.TracerError saying so (it used to hang on 3.11); code run in
sub-interpreters while the main one is traced is not traced, and the main
interpreter's trace is unaffected."""

from __future__ import annotations


import pytest

from pyusttest.environment import PYTHON
from pyusttest.run import run_hooked, run_plain
from pyusttest.traces import assert_balanced

# 3.13 has _interpreters; 3.9 to 3.12 _xxsubinterpreters. run_string raises in
# some versions and returns the exception's description in others.
INTERPRETERS = """\
try:
    import _interpreters as interpreters
except ImportError:
    import _xxsubinterpreters as interpreters
def run_in_sub(code):
    interp = interpreters.create()
    try:
        result = interpreters.run_string(interp, code)
    except Exception as error:
        result = error
    interpreters.destroy(interp)
    return result
"""


def _needs_subinterpreters():
    probe = "import importlib.util as u; print(any(u.find_spec(n) for n in " \
            "('_interpreters', '_xxsubinterpreters')))"
    if run_plain(["-c", probe]).stdout.strip() != "True":
        pytest.skip(f"{PYTHON} has no _interpreters or _xxsubinterpreters module")


def test_start_in_a_subinterpreter_is_refused(make_program):
    _needs_subinterpreters()
    program = make_program(INTERPRETERS + """\
run_in_sub('''
import pyust
try:
    pyust.start()
except pyust.TracerError as error:
    print("refused:", error)
else:
    print("started")
''')
print("main goes on")
""")
    result = run_plain([program])
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "refused: Cannot trace in a sub-interpreter: pyust's native hook holds per-process "
        "state and traces the main interpreter only; start pyust there (code run in "
        "sub-interpreters is not traced)\nmain goes on\n"), result.stderr


def test_subinterpreter_code_is_not_traced(session, make_program):
    _needs_subinterpreters()
    program = make_program(INTERPRETERS + """\
def before():
    return 1
def after():
    return 2
before()
print(run_in_sub("def in_sub():\\n    return 3\\nin_sub()\\n"))
after()
""")
    plain = run_plain([program])
    traced = run_hooked([program])
    assert (traced.returncode, traced.stdout, traced.stderr) == (
        plain.returncode, plain.stdout, plain.stderr)
    trace = session.read()
    flow = trace.program_flow(program)
    names = [name for kind, name, *_ in flow if kind == "call"]
    assert "before" in names and "after" in names and "run_in_sub" in names
    assert "in_sub" not in {c["qualname"] for c in trace.codes.values()}
    for events in trace.threads().values():
        assert_balanced(trace, events, closed=False)
