"""Tracing only the modules a user names: --modules/--exclude, the API, and
line events only for the included modules."""

from __future__ import annotations

from pyusttest.environment import child_env
from pyusttest.run import run_hooked, run_plain


def make_packages(tmp_path):
    """app (a script) -> mod.work -> modx.helper -> mod.sub.deep -> json."""
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "__init__.py").write_text(
        "import modx\nfrom mod import sub\n"
        "def work():\n    modx.helper()\n    return sub.deep()\n")
    (tmp_path / "mod" / "sub.py").write_text(
        "import json\ndef deep():\n    x = 1\n    return json.dumps([x])\n")
    (tmp_path / "modx.py").write_text("def helper():\n    return 2\n")
    app = tmp_path / "app.py"
    app.write_text("import mod\ndef main():\n    mod.work()\nmain()\n")
    return str(app)


def traced_names(trace):
    return [(trace.codes[e["fields"]["id"]]["module"], e["fields"]["name"])
            for e in trace.of("python:call")]


def test_modules_trace_only_matching_packages(session, tmp_path):
    app = make_packages(tmp_path)
    result = run_hooked([app], flags=["--modules", "mod"])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    # `mod` matches mod and mod.sub on a dotted boundary, never modx; the
    # script (__main__) and json are not included. Module bodies run at import.
    assert traced_names(trace) == [("mod", "<module>"), ("mod.sub", "<module>"),
                                   ("mod", "work"), ("mod.sub", "deep")]
    assert {c["module"] for c in trace.codes.values()} == {"mod", "mod.sub"}


def test_exclude_refines_include(session, tmp_path):
    app = make_packages(tmp_path)
    result = run_hooked([app], flags=["--modules", "mod,__main__", "--exclude", "mod.sub"])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    assert traced_names(trace) == [("__main__", "<module>"), ("mod", "<module>"),
                                   ("__main__", "main"), ("mod", "work")]


def test_exclude_alone_keeps_everything_else(session, tmp_path):
    app = make_packages(tmp_path)
    result = run_hooked([app], flags=["--exclude", "json", "--exclude", "mod.sub,importlib"])
    assert result.returncode == 0, result.stderr
    modules = {c["module"] for c in session.read().codes.values()}
    assert {"__main__", "mod", "modx"} <= modules
    assert not any(m == "json" or m.startswith(("json.", "mod.sub", "importlib"))
                   for m in modules)


def test_lines_only_for_included_modules(session, tmp_path):
    app = make_packages(tmp_path)
    result = run_hooked([app], flags=["--modules", "mod.sub", "--lines"])
    assert result.returncode == 0, result.stderr
    trace = session.read()
    lines = [(trace.codes[e["fields"]["id"]]["qualname"], e["fields"]["line"])
             for e in trace.of("python:line")]
    # module body of mod/sub.py (lines 1, 2) at import, then deep() (3, 4)
    assert lines == [("<module>", 1), ("<module>", 2), ("deep", 3), ("deep", 4)]


def test_api_filters_and_restart_with_new_ones(session, make_program, tmp_path):
    make_packages(tmp_path)
    program = make_program("""\
        import pyust, mod, modx
        pyust.start(modules=["modx"])
        mod.work()
        pyust.stop()
        pyust.start(modules="mod", exclude=["modx"])
        mod.work()
        pyust.stop()
        try:
            pyust.start(modules=[3])
        except pyust.TracerError as e:
            print(e)
        """, name="restart.py")
    result = run_plain([program], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "module prefixes are strings, not int: 3\n"
    trace = session.read()
    # The verdict cached on each code object is taken again under new filters.
    assert traced_names(trace) == [("modx", "helper"), ("mod", "work"), ("mod.sub", "deep")]


def test_activation_variable_takes_filters(session, tmp_path):
    make_packages(tmp_path)
    from pyusttest.environment import PYTHON
    import subprocess

    program = tmp_path / "act.py"
    program.write_text("import pyust._activate as a\nimport mod\n"
                       "print(a._parse('V', '--modules mod --exclude mod.sub --lines'))\n"
                       "print(a._parse('V', '--modules'))\n")
    result = subprocess.run([PYTHON, str(program)], capture_output=True, text=True,
                            env=child_env(), cwd=tmp_path)
    assert result.stdout.splitlines() == [
        "{'modules': ['mod'], 'exclude': ['mod.sub'], 'c_calls': False, 'lines': True, "
        "'fast': False, 'dormant': True}",
        "None"]
    assert "unknown option '--modules'" in result.stderr


def test_forcing_an_unknown_simd_implementation_is_a_clear_error(make_program):
    program = make_program("pass\n")
    result = run_hooked([program], env=child_env(PYUST_SIMD="sse9"))
    assert result.returncode == 1
    assert result.stderr.startswith("pyust: error: Cannot start tracing: ")
    assert "PYUST_SIMD" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
