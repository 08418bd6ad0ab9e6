"""scripts/tracecompass/pyust-callstack.xml against Trace Compass's own schema.

The schema files are Trace Compass's (EPL-2.0), kept outside the project in
../shared/tracecompass-xsd (relative to the repository root); they are never copied here.
A missing schema or xmllint fails the test with what to do: it is never skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from pyusttest.environment import ROOT

ANALYSIS = ROOT / "scripts" / "tracecompass" / "pyust-callstack.xml"
SCHEMA_DIR = ROOT.parent / "shared" / "tracecompass-xsd"
SCHEMA = SCHEMA_DIR / "xmlDefinition.xsd"


def xmllint(path) -> subprocess.CompletedProcess:
    if not SCHEMA.is_file():
        pytest.fail(f"Trace Compass's schema is missing: {SCHEMA} (the xmlDefinition.xsd of "
                    "Trace Compass's tmf.analysis.xml.core module and the files it includes)")
    if shutil.which("xmllint") is None:
        pytest.fail("xmllint is missing: apt-get install libxml2-utils (scripts/setup does)")
    return subprocess.run(["xmllint", "--noout", "--schema", str(SCHEMA), str(path)],
                          capture_output=True, text=True, timeout=60)


def test_the_analysis_validates_against_trace_compass_schema():
    result = xmllint(ANALYSIS)
    assert result.returncode == 0, result.stderr
    assert "validates" in result.stderr


def test_the_schema_really_checks_the_analysis(tmp_path):
    """A wrong stack operation must fail, so that the test above means something."""
    broken = tmp_path / "broken.xml"
    broken.write_text(ANALYSIS.read_text().replace('stack="push"', 'stack="shove"', 1))
    result = xmllint(broken)
    assert result.returncode != 0
    assert "shove" in result.stderr


def test_the_analysis_reads_what_pyust_records(foo_bar_baz):
    """Its event names and fields are those of a real pyust trace (the babeltrace2
    names; Trace Compass shows the vpid/vtid contexts as context._vpid/_vtid)."""
    text = ANALYSIS.read_text()
    handled = set(re.findall(r'eventName="([^"]+)"', text))
    assert {"python:call", "python:return"} <= handled
    recorded = {e["name"] for e in foo_bar_baz.trace.events}
    assert {"python:call", "python:return"} <= recorded
    call = next(e for e in foo_bar_baz.trace.events if e["name"] == "python:call")
    assert "name" in call["fields"] and call["vpid"] and call["vtid"]
    assert 'value="context._vpid"' in text and 'value="context._vtid"' in text
    assert '<stateValue type="eventField" value="name" stack="push"/>' in text
