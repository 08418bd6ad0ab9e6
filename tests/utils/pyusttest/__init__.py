"""pyust's test harness, shared by every pytest folder under tests/: real LTTng sessions, programs
traced by the real hook, traces read back with babeltrace2. Tests import each name from the
module that holds it (`from pyusttest.run import run_pyust`); this file imports none of them, so
that a module run as a script (`python3 -m pyusttest.damage_corpus`) loads only what it needs.

pytest finds the package through tests/pytest.ini (`pythonpath = utils`); anything else that
imports it runs with `PYTHONPATH=tests/utils`. Its fixtures are in the conftest.py files.

  environment   the interpreter, package and plugin under test (PYUST_TEST_PYTHON,
                PYUST_TEST_PATH, PYUST_TEST_FAST, PYUST_PLUGIN_PATH), a child's environment
  run           programs run under the hook, under a pyust command, or untraced
  sessions      the `lttng` command, real sessions recording python:*, slowed session daemons
  traces        traces read back as events (read_trace.py, run with bt2), and their checks
  attach        a busy program and `pyust attach` run against it
  local_user    a throw-away unprivileged local user, for the tests of issue 26
  live          a relay daemon of the tests' own and `pyust run --live` in the background
  report        programs traced once, then `pyust report` run on their traces
  damage_corpus damaged copies of a trace and the checks every reader must pass on them
                (also a script: `PYTHONPATH=tests/utils python3 -m pyusttest.damage_corpus`)
"""
