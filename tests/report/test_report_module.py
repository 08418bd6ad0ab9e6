"""The pure parts behind pyust report, imported from the package under test
(PYUST_TEST_PATH): option values (pyust.args), babeltrace2's parameter quoting, the
command line and error summaries (pyust.babeltrace), metadata checks (pyust.ctf)."""

from __future__ import annotations

import datetime
import importlib
import struct
import sys

import pytest

from pyusttest.environment import PYUST_PATH

sys.path.insert(0, PYUST_PATH)
args = importlib.import_module("pyust.args")
babeltrace = importlib.import_module("pyust.babeltrace")
ctf = importlib.import_module("pyust.ctf")
sys.path.remove(PYUST_PATH)


@pytest.mark.parametrize("text, ns", [
    ("0", 0), ("250", 250), ("250ns", 250), ("10us", 10_000), ("10µs", 10_000),
    ("2ms", 2_000_000), ("1.5s", 1_500_000_000), ("0.000000001s", 1), (" 3 ms ", 3_000_000),
])
def test_durations(text, ns):
    assert args.parse_duration(text) == ns


@pytest.mark.parametrize("text", ["", "ms", "-1ms", "1.5", "1.5ns", "1e3", "10 parsecs", "1..2s"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        args.parse_duration(text)


def test_times():
    def never():
        raise AssertionError("the trace's start is not needed")

    assert args.parse_time("1795315016693230182", never) == 1795315016693230182
    assert args.parse_time("1795315016.693230182", never) == 1795315016693230182
    assert args.parse_time("1795315016.5", never) == 1795315016500000000
    assert args.parse_time("-1.5", never) == -1500000000
    assert args.parse_time("250ms", never) == 250_000_000
    assert args.parse_time("+1.5s", lambda: 1000) == 1_500_001_000
    local = datetime.datetime(2026, 11, 22, 2, 36, 56)
    assert args.parse_time("2026-11-22 02:36:56.5", never) == \
        int(local.timestamp()) * 10**9 + 500_000_000
    assert args.parse_time("2026-11-22T02:36", never) == \
        int(local.replace(second=0).timestamp()) * 10**9
    start = int(local.timestamp()) * 10**9
    assert args.parse_time("03:00:01.000000002", lambda: start) == \
        int(local.replace(hour=3, minute=0, second=1).timestamp()) * 10**9 + 2


@pytest.mark.parametrize("text", ["noon", "+x", "25:61", "2026-11-22", "1,5"])
def test_bad_times(text):
    with pytest.raises(ValueError):
        args.parse_time(text, lambda: 0)


@pytest.mark.parametrize("text, quoted", [
    ("profile", '"profile"'),
    ('/a "b"/c\\d', '"/a \\"b\\"/c\\\\d"'),
    ("x,y=z", '"x,y=z"'),
    ("tab\there\nnew", '"tab\\011here\\012new"'),
    ("\u00e9t\u00e9", '"\u00e9t\u00e9"'),
])
def test_param_strings(text, quoted):
    assert babeltrace.param_string(text) == quoted


def test_param_string_refuses_undecodable_paths():
    with pytest.raises(babeltrace.BabeltraceError, match="not valid UTF-8"):
        babeltrace.param_string("/tmp/\udcff.svg")


def test_command_line_has_one_argument_per_item(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command = babeltrace.report_command(
        ["-trace", "t2"], {"format": "svg", "pid": 12, "output": "/o, p.svg"}, ["/plugins"])
    assert command == [
        "babeltrace2", "--plugin-path", "/plugins",
        str(tmp_path / "-trace"), str(tmp_path / "t2"),
        "-c", "sink.pyust.report", "-p", 'note-prefix="pyust: "',
        "-p", 'format="svg"', "-p", "pid=12", "-p", 'output="/o, p.svg"',
    ]


def test_plugin_dirs(monkeypatch, tmp_path):
    monkeypatch.setenv("PYUST_PLUGIN_PATH", f"{tmp_path}:")
    assert babeltrace.plugin_dirs() == [str(tmp_path)]
    monkeypatch.setenv("PYUST_PLUGIN_PATH", str(tmp_path / "missing"))
    with pytest.raises(babeltrace.BabeltraceError, match="not a directory"):
        babeltrace.plugin_dirs()


SINK_ERROR = """\
11-22 02:37:37.016  8633  8633 E CLI cmd_run@babeltrace2.c:2480 Cannot create components.

ERROR:    [Babeltrace CLI] (babeltrace2.c:2480)
  Cannot create components.
CAUSED BY [libbabeltrace2] (graph.c:973)
  Component initialization method failed: status=ERROR,
  comp-addr=0x56398d2b2690, comp-name="sink.pyust.report"
CAUSED BY [sink.pyust.report: 'sink.pyust.report'] (../src/plugin/common/bt_util.hpp:129)
  Cannot initialize sink.pyust.report: bad parameter value: name=format,
  value=bogus, expected=profile|tree|folded|lines|chrome|svg
"""

MISSING_PLUGIN = """\
ERROR:    [Babeltrace CLI] (babeltrace2.c:2465)
  Cannot initialize the command's context.
CAUSED BY [Babeltrace CLI] (babeltrace2.c:1720)
  Cannot find component class: plugin-name="pyust", comp-cls-name="report",
  comp-cls-type=4
"""


def test_error_summaries():
    assert babeltrace.explain_failure(SINK_ERROR, 1) == (
        "bad parameter value: name=format, value=bogus, expected=profile|tree|folded|lines|"
        "chrome|svg")
    assert "cannot find pyust's plugin" in babeltrace.explain_failure(MISSING_PLUGIN, 1)
    assert babeltrace.explain_failure("something odd\n", 3) == (
        "babeltrace2 failed (exit status 3): something odd")
    # A damaged trace's bytes in babeltrace2's message (a bit flip gave this one): the
    # summary stays one line a terminal shows as it is.
    garbled = SINK_ERROR.replace("value=bogus", "value=bo\x1dg\u2028us\x1b[2J")
    assert babeltrace.explain_failure(garbled, 1) == (
        "bad parameter value: name=format, value=bo\\x1dg\\u2028us\\x1b[2J, expected=profile|"
        "tree|folded|lines|chrome|svg")


def test_big_endian_packetized_metadata(tmp_path):
    text = b"/* CTF 1.8 */\ntrace { major = 1; minor = 8; };\nstream { id = 0; };\n"
    header = ">I16sIII5B"
    size = 37 + len(text)
    packet = struct.pack(header, 0x75D11D57, bytes(16), 0, size * 8, 128 * 8, 0, 0, 0, 1, 8)
    path = tmp_path / "metadata"
    path.write_bytes(packet + text + bytes(128 - size))
    ctf.check_metadata(str(path))
    path.write_bytes(packet + text[:-10])
    with pytest.raises(ctf.CtfError, match="truncated"):
        ctf.check_metadata(str(path))
