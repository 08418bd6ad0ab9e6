"""Tests of filter.pyust.expand: fast-mode traces (python:batch) read back as standard ones.

Synthetic traces come from bt_plugin_pyust_fast.py (source.pyustfast.cases): one program
history recorded in standard mode and in fast mode, so that the expanded fast trace can be
compared with the standard one line for line. The end-to-end test records a real program with
`pyust run` and `pyust run --fast` (real LTTng) and compares what each thread did. Every
babeltrace2 run has a timeout.

    /usr/bin/python3 -m pytest tests/plugin/test_expand.py
"""

import os
import re
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from pyusttest.environment import PYTHON, python_version
from pyusttest.run import run_pyust
from test_golden import CASES as STANDARD_CASES
from test_golden import babeltrace2, flat, run_case

EXPAND = ["-c", "filter.pyust.expand"]


def fast_case(case, *components, mode="fast"):
    return babeltrace2("-c", "source.pyustfast.cases",
                       "-p", 'case="%s",mode="%s"' % (case, mode), *components)


@pytest.fixture(scope="module")
def standard():
    result = fast_case("two_threads", mode="standard")
    assert result.returncode == 0, result.stderr
    return result.stdout


def times(text):
    return [line[1:19] for line in text.splitlines() if line.startswith("[")]


def test_expanded_fast_trace_is_the_standard_trace(standard):
    result = fast_case("two_threads", *EXPAND)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == standard
    lines = result.stdout.splitlines()
    # Spot checks against the history itself, not only against the standard recording: the
    # worker's records were written by thread 100 (vtid comes from the payload), a far id keeps
    # its name, an unwinding return and a line number survive, the unrelated tick stays in place.
    assert ('[00:00:00.000002000] (+0.000001000) testhost python:call: { vpid = 100, vtid = 101, '
            'procname = "python3" }, { id = 0x6400000004, name = "Thread.run" }') in lines
    assert any('{ id = 0x6300000005, name = "inherited" }' in line for line in lines)
    assert any('vtid = 100' in line and '{ id = 0x6400000003, unwind = 1 }' in line
               for line in lines)
    assert any('vtid = 101' in line and '{ id = 0x6400000002, line = 5 }' in line
               for line in lines)
    ticks = [i for i, line in enumerate(lines) if "other:tick" in line]
    assert [lines[i - 1].split("python:")[1][:5] for i in ticks] == ["line:", "retur"]
    assert "python:batch" not in result.stdout and "python:horizon" not in result.stdout


def test_a_record_before_its_packet_opens_that_packet_early(standard):
    # No stream has a packet open at 8000 and 9000 ns: the packet of the batch's stream begins
    # at the first record's time instead of 9500, and every record comes out, as recorded.
    result = fast_case("lazy_packets", *EXPAND)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == standard
    folded = fast_case("lazy_packets", *EXPAND, "-c", "sink.pyust.report", "-p", 'format="folded"')
    full = fast_case("two_threads", *EXPAND, "-c", "sink.pyust.report", "-p", 'format="folded"')
    assert folded.returncode == 0 and folded.stdout == full.stdout != "", folded.stderr


def test_a_call_no_code_named_is_unknown_not_a_name():
    # Without python:code events, expand names each call "?" (a string field is never empty);
    # the report labels such a frame by its id, as when nothing named it.
    dump = fast_case("no_codes", *EXPAND)
    assert dump.returncode == 0, dump.stderr
    assert re.search(r'name = "\\?\?"', dump.stdout)  # text.pretty 2.0 escapes the "?"
    result = fast_case("no_codes", *EXPAND, "-c", "sink.pyust.report", "-p", 'format="folded"')
    assert result.returncode == 0, result.stderr
    assert "<unknown 0x6400000002>" in result.stdout  # foo's id
    assert "?:" not in result.stdout


def test_records_carry_their_writers_context_when_it_changes():
    # Batches A and D of thread 100 wait on the same stream together; D was written after the
    # thread renamed itself, so its records carry the new procname, A's the old one.
    standard = fast_case("renamed", mode="standard")
    assert standard.returncode == 0, standard.stderr
    result = fast_case("renamed", *EXPAND)
    assert result.returncode == 0, result.stderr
    assert result.stdout == standard.stdout
    names = [(line[1:19], re.search(r'procname = "(\w+)"', line).group(1))
             for line in result.stdout.splitlines() if "vtid = 100," in line and "python:" in line]
    assert ("00:00:00.000006000", "python3") in names  # return from foo (batch A)
    assert ("00:00:00.000008000", "renamed") in names  # call of bar (batch D)
    assert [name for _, name in names] == sorted((name for _, name in names),
                                                 key=lambda name: name == "renamed")


def test_upstream_error_comes_after_every_record_held(standard):
    # The source fails past the last batch: every record it delivered still comes out, in
    # order, and then the error.
    result = fast_case("fails", *EXPAND)
    assert result.returncode != 0
    assert "damaged packet (case fails)" in result.stderr
    expected = [line for line in standard.splitlines() if line[1:19] < "00:00:00.000014600"]
    assert result.stdout.splitlines() == expected
    # A report that salvages has all of it, and says where the trace stopped.
    report = fast_case("fails", *EXPAND, "-c", "sink.pyust.report",
                       "-p", 'format="folded",salvage=yes')
    full = fast_case("two_threads", *EXPAND, "-c", "sink.pyust.report", "-p", 'format="folded"')
    assert report.returncode == 0, report.stderr
    assert report.stdout == full.stdout != ""
    # One line on standard error, which names the sink (its default note-prefix).
    assert report.stderr.splitlines()[-1].startswith(
        "sink.pyust.report: warning: damaged trace: babeltrace2 stopped reading after ")


def test_report_through_expand_equals_standard_report():
    for fmt in ("tree", "profile"):
        direct = fast_case("two_threads", "-c", "sink.pyust.report", "-p", "format=%s" % fmt,
                           mode="standard")
        expanded = fast_case("two_threads", *EXPAND, "-c", "sink.pyust.report",
                             "-p", "format=%s" % fmt)
        assert direct.returncode == 0 and expanded.returncode == 0, expanded.stderr
        assert expanded.stdout == direct.stdout
        assert "Bar.run" in direct.stdout


@pytest.mark.parametrize("case", STANDARD_CASES)
def test_standard_trace_passes_unchanged(case):
    """Packet-less streams, discarded events, no batch: the same output with or without."""
    plain = run_case(case)
    expanded = run_case(case, *EXPAND)
    assert expanded.returncode == 0, expanded.stderr
    assert (expanded.stdout, expanded.stderr) == (plain.stdout, plain.stderr)


def test_standard_recording_with_packets_passes_unchanged(standard):
    result = fast_case("two_threads", *EXPAND, mode="standard")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == standard


def test_gap_in_first_is_reported_with_count_and_window(standard):
    # No look-ahead: the horizons alone decide what is released (see the window below).
    result = fast_case("gap", *EXPAND, "-p", "lookahead=0")
    assert result.returncode == 0, result.stderr
    # Thread 100's batch after records 0-4 starts at 7: 2 records lost, from the time already
    # released (the horizon at 7.8 us, later than the previous batch's end, 6.5 us) to the
    # batch's first record (8 us).
    assert ("Tracer discarded 2 events between [00:00:00.000007800] and [00:00:00.000008000]"
            in flat(result.stderr))
    assert 'within stream "cpu0"' in flat(result.stderr)
    assert "2 lost by the tracer" in result.stderr
    assert result.stdout == standard  # the records around the gap are all there


def test_malformed_batch_is_reported_and_skipped(standard):
    result = fast_case("malformed", *EXPAND)
    assert result.returncode == 0, result.stderr
    error = flat(result.stderr)
    assert ("skipping a malformed python:batch (count mismatch: count=4, records=1): "
            "stream=cpu0, event index=7, pid=100, tid=101, count=4") in error
    assert "Tracer discarded 4 events between [00:00:00.000001800] and [00:00:00.000007300]" in error
    # Exactly the 4 records of thread 101 in [2, 7] us are missing; everything else is there.
    missing = [line for line in standard.splitlines()
               if "vtid = 101" in line and "python:" in line
               and 2000 <= int(line[13:19]) <= 7000]
    assert len(missing) == 4
    strip = re.compile(r"\(\+[0-9.?]+\) ")  # the deltas change where lines are missing
    assert [strip.sub("", line) for line in result.stdout.splitlines()] == [
        strip.sub("", line) for line in standard.splitlines() if line not in missing]


def test_stale_horizon_never_gives_out_of_order_events():
    result = fast_case("stale", *EXPAND, "-p", "max-delay=1000", "-p", "lookahead=0")
    assert result.returncode == 0, result.stderr
    assert "lags the trace by more than max-delay (1000 ns)" in result.stderr
    assert times(result.stdout) == sorted(times(result.stdout))
    late = re.search(r"(\d+) too late to put in order", result.stderr)
    assert late and int(late.group(1)) > 0
    reported = sum(int(n) for n in re.findall(r"Tracer discarded (\d+) events", result.stderr))
    kept = sum(1 for line in result.stdout.splitlines()
               if re.search(r"python:(call|return|line):", line))
    assert reported == int(late.group(1))
    assert kept + reported == 18  # every record of the history, kept or reported


def test_log_level_above_warning_silences_the_lines_about_missing_records():
    """The filter's lines are warnings at the component's log level: the CLI's default
    (WARNING) shows them (above), --log-level=ERROR does not; the output is the same."""
    shown = fast_case("stale", *EXPAND, "-p", "max-delay=1000", "-p", "lookahead=0")
    quiet = babeltrace2("--log-level=ERROR", "-c", "source.pyustfast.cases",
                        "-p", 'case="stale",mode="fast"', *EXPAND,
                        "-p", "max-delay=1000", "-p", "lookahead=0")
    assert quiet.returncode == 0, quiet.stderr
    assert "too late to put in order" in shown.stderr
    assert "filter.pyust.expand" not in quiet.stderr
    assert quiet.stdout == shown.stdout


def test_without_horizon_holding_back_everything_is_in_order(standard):
    """The same trace with the default max-delay: the one horizon holds all until the end."""
    result = fast_case("stale", *EXPAND)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == standard


def test_lookahead_keeps_batches_before_the_first_horizon_in_order():
    """A snapshot may begin after a process's first horizon: its batches then come before
    any horizon of it. The first batch shows that the trace holds fast-mode records (until
    then nothing waits: a standard trace must not), so its records are late, and reported;
    from then on the look-ahead (200 ms by default, far more than this history's 20 us)
    keeps the other batches in order."""
    def late(result):
        assert result.returncode == 0, result.stderr
        assert times(result.stdout) == sorted(times(result.stdout))
        found = re.search(r"(\d+) too late to put in order", result.stderr)
        return int(found.group(1)) if found else 0

    # The first batch holds the main thread's records from 1 us to 6 us: 5 records.
    assert late(fast_case("late_horizon", *EXPAND)) == 5
    assert late(fast_case("late_horizon", *EXPAND, "-p", "lookahead=0")) > 5


def test_missing_call_class_is_a_clear_error():
    result = fast_case("no_call", *EXPAND)
    assert result.returncode != 0
    assert ("the trace declares python:batch but not python:call, fix=enable python:* "
            "(lttng enable-event -u 'python:*')") in flat(result.stderr)


@pytest.mark.parametrize("component", ["sink.pyust.report", "filter.pyust.stacks"])
def test_batches_without_expand_are_refused(component):
    result = fast_case("two_threads", "-c", component)
    assert result.returncode != 0
    assert "fix=put filter.pyust.expand in front" in flat(result.stderr)


def sink_ctf_fs_versions():
    """The CTF versions sink.ctf.fs can be asked for: babeltrace2 2.1 writes CTF 2 by default
    and 1.8 with ctf-version=1 (what Trace Compass reads); 2.0 writes CTF 1.8 and knows no such
    parameter. Asked of babeltrace2 itself, on a trace of one case."""
    with tempfile.TemporaryDirectory() as directory:
        probe = fast_case("two_threads", "-c", "sink.ctf.fs",
                          "-p", 'path="%s",ctf-version="1"' % directory, mode="standard")
    return ["default", "1"] if probe.returncode == 0 else ["default"]


@pytest.mark.parametrize("ctf_version", sink_ctf_fs_versions())
@pytest.mark.parametrize("case, params", [("two_threads", []),
                                          ("gap", ["-p", "report-discarded=no"])])
def test_ctf_fs_writes_a_plain_trace(tmp_path, standard, case, params, ctf_version):
    out = tmp_path / "out"
    sink = 'path="%s"' % out + ("" if ctf_version == "default" else ',ctf-version="%s"' % ctf_version)
    result = fast_case(case, *EXPAND, *params, "-c", "sink.ctf.fs", "-p", sink)
    assert result.returncode == 0, result.stderr
    back = babeltrace2(str(out))
    assert back.returncode == 0, back.stderr
    assert back.stdout == standard
    metadata = (out / "trace" / "metadata").read_bytes()
    # sink.ctf.fs declares the event classes it wrote: Trace Compass sees no batch at all.
    assert b"python:call" in metadata and b"python:batch" not in metadata


@pytest.mark.parametrize("param, message", [
    ("max-delay=-1", "bad parameter value: name=max-delay, value=-1"),
    ("report-discarded=3", "bad parameter type: name=report-discarded, expected=yes|no"),
    ("depth=1", "unknown parameter: name=depth"),
])
def test_bad_parameter(param, message):
    result = fast_case("two_threads", *EXPAND, "-p", param)
    assert result.returncode != 0
    assert "Cannot initialize filter.pyust.expand" in flat(result.stderr)
    assert message in flat(result.stderr)


# End to end: the same program recorded by the real hook in both modes.
PROGRAM = """\
import threading

def square_sum(count):
    return sum(i * i for i in range(count))

def step(count):
    total = square_sum(count)
    return total - square_sum(count // 3)

def work():
    return [step(40) for _ in range(400)]

def boom():
    raise ValueError("x")

def main():
    worker = threading.Thread(target=work, name="Worker")
    worker.start()
    work()
    try:
        boom()
    except ValueError:
        pass
    worker.join()

main()
"""


def per_thread(text, pid):
    """{thread name: [(event, qualname)]} of one process, from a pretty-printed trace."""
    names, thread_names, sequences = {}, {}, defaultdict(list)
    pattern = re.compile(r"(python:\w+): .*vpid = (\d+), vtid = (\d+).*?\}, \{ (.*) \}$")
    for line in text.splitlines():
        match = pattern.search(line)
        if not match or int(match.group(2)) != pid:
            continue
        event, tid, payload = match.group(1), int(match.group(3)), match.group(4)
        fields = dict(re.findall(r'(\w+) = ("[^"]*"|[^,]+)', payload))
        if event == "python:code":
            names[fields["id"]] = fields["qualname"].strip('"')
        elif event == "python:thread":
            thread_names[int(fields["tid"])] = fields["name"].strip('"')
        elif event in ("python:call", "python:return"):
            sequences[tid].append((event, names.get(fields["id"], "?"), fields.get("unwind")))
    return {thread_names.get(tid, tid): seq for tid, seq in sequences.items()}


def recorded_pid(text):
    """The pid of our program (other engineers' programs may share the session daemon)."""
    # The file name is absolute, as python makes it for a script.
    match = re.search(r'python:code: .*vpid = (\d+).*file = "(?:[^"]*/)?%s"' % SCRIPT, text)
    assert match, "no python:code event of %s in the trace" % SCRIPT
    return int(match.group(1))


SCRIPT = "expand_e2e_%d.py" % os.getpid()


@pytest.fixture(scope="module")
def both_modes():
    work = Path(tempfile.mkdtemp(prefix="pyust-expand-"))
    (work / SCRIPT).write_text(PROGRAM)
    traces = {}
    for mode, flags in (("standard", []), ("fast", ["--fast"])):
        result = run_pyust(["run", *flags, "-o", str(work / mode), "--", SCRIPT], cwd=work)
        assert result.returncode == 0, "pyust run %s failed: %s" % (flags, result.stderr[-500:])
        traces[mode] = work / mode
    yield traces
    shutil.rmtree(work, ignore_errors=True)


def test_real_fast_trace_expands_to_the_standard_sequences(both_modes):
    standard = babeltrace2(str(both_modes["standard"]), timeout=120)
    fast_raw = babeltrace2(str(both_modes["fast"]), timeout=120)
    assert "python:batch" in fast_raw.stdout, "pyust run --fast recorded no python:batch"
    fast = babeltrace2(str(both_modes["fast"]), *EXPAND, timeout=120)
    assert standard.returncode == 0 and fast.returncode == 0, fast.stderr
    expected = per_thread(standard.stdout, recorded_pid(standard.stdout))
    got = per_thread(fast.stdout, recorded_pid(fast.stdout))
    assert set(got) == set(expected) == {"MainThread", "Worker"}
    for thread in expected:
        assert got[thread] == expected[thread], thread
    assert ("python:return", "boom", "1") in got["MainThread"]
    assert sum(1 for e in got["Worker"] if e[:2] == ("python:call", "square_sum")) == 800
    assert times(fast.stdout) == sorted(times(fast.stdout))


def test_real_fast_trace_report(both_modes):
    # Both through the filter: another engineer's fast-mode program may be in either trace.
    folded = {}
    for mode, trace in both_modes.items():
        pid = recorded_pid(babeltrace2(str(trace), timeout=120).stdout)
        result = babeltrace2(str(trace), *EXPAND, "-c", "sink.pyust.report",
                             "-p", "format=folded", "-p", "pid=%d" % pid, timeout=120)
        assert result.returncode == 0, result.stderr
        folded[mode] = result.stdout
    standard, fast = folded["standard"], folded["fast"]

    def paths(text):
        return sorted({line.rsplit(" ", 1)[0] for line in text.splitlines()
                       if line.startswith("__main__:<module>")})

    assert paths(fast) == paths(standard)
    # From 3.12 on, list comprehensions run inline (PEP 709): no <listcomp> frame. Before
    # 3.11, code objects have no qualified name: pyust shows co_name.
    version = python_version(PYTHON)
    listcomp = ("" if version >= (3, 12) else "__main__:work.<locals>.<listcomp>;"
                if version >= (3, 11) else "__main__:<listcomp>;")
    genexpr = "square_sum.<locals>.<genexpr>" if version >= (3, 11) else "<genexpr>"
    assert ("__main__:<module>;__main__:main;__main__:work;" + listcomp +
            "__main__:step;__main__:square_sum;__main__:" + genexpr
            in paths(fast)), paths(fast)
