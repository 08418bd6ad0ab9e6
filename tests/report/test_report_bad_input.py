"""Bad input to `pyust report`: each case answers within BAD_INPUT_LIMIT seconds with one
line `pyust: error: ...` naming what is wrong, and a non-zero exit status.

The damaged traces are copies of a real one. babeltrace2 2.0.4 spins for ever on some
truncated metadata files (e.g. cut at byte 100 of the packetized metadata): those must be
caught before babeltrace2 runs.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path

import pytest

from pyusttest.environment import child_env
from pyusttest.report import BAD_INPUT_LIMIT, ok, one_error_line, report


def fails(*args, env=None) -> str:
    result = report(*args, timeout=BAD_INPUT_LIMIT * 3, env=env)
    assert result.seconds < BAD_INPUT_LIMIT, f"took {result.seconds:.1f} s"
    return one_error_line(result)


def copy_trace(source: Path, destination: Path) -> Path:
    shutil.copytree(source, destination)
    return destination


def metadata_of(trace: Path) -> Path:
    (metadata,) = trace.rglob("metadata")
    return metadata


def stream_files(trace: Path) -> list:
    directory = metadata_of(trace).parent
    return sorted(p for p in directory.iterdir() if p.is_file() and p.name != "metadata")


def is_packetized(metadata: bytes) -> bool:
    """LTTng up to 2.14 writes CTF 1.8 metadata in packets; 2.15+ as plain text."""
    return metadata[:4] == struct.pack("<I", 0x75D11D57)


def packet_contents(metadata: bytes) -> bytes:
    """The TSDL text of packetized metadata (little-endian, as LTTng writes it on x86), or
    the metadata itself when it is plain text."""
    if not is_packetized(metadata):
        return metadata
    text, offset = b"", 0
    while offset < len(metadata):
        content_bits, packet_bits = struct.unpack_from("<II", metadata, offset + 24)
        text += metadata[offset + 37:offset + content_bits // 8]
        offset += packet_bits // 8
    return text


def test_no_such_directory(tmp_path):
    assert "no such trace directory" in fails(tmp_path / "missing")


def test_empty_directory(tmp_path):
    assert "is empty: not a trace" in fails(tmp_path)


def test_a_file_is_not_a_trace(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    assert "is not a directory" in fails(tmp_path / "notes.txt")


def test_a_directory_without_metadata_is_not_a_trace(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data").write_bytes(os.urandom(4096))
    assert "not a CTF trace: no metadata file" in fails(tmp_path)


def test_metadata_that_is_neither_packetized_nor_text(foo_bar_baz, tmp_path):
    trace = copy_trace(foo_bar_baz.path, tmp_path / "t")
    metadata_of(trace).write_bytes(b"\x00" * 4096)
    assert "neither packetized metadata" in fails(trace)


@pytest.mark.parametrize("size", [0, 20, 37, 100, 2000])
def test_truncated_metadata_is_caught_before_babeltrace2(foo_bar_baz, tmp_path, size):
    trace = copy_trace(foo_bar_baz.path, tmp_path / "t")
    with open(metadata_of(trace), "r+b") as file:
        file.truncate(size)
    message = fails(trace)
    assert "damaged trace" in message and str(metadata_of(trace)) in message


def test_metadata_cut_at_a_packet_boundary(foo_bar_baz_ctf18, tmp_path):
    """Whole packets (whole lines, for plain text metadata), but the declarations stop in
    the middle, inside the stream's."""
    trace = copy_trace(foo_bar_baz_ctf18.path, tmp_path / "t")
    metadata = metadata_of(trace)
    data = metadata.read_bytes()
    text = packet_contents(data)
    cut = text[:text.index(b"\n", text.index(b"stream {")) + 1]
    if is_packetized(data):
        # Where LTTng ends its packets depends on when it flushes: the cut text goes in
        # packets of its own (the first of LTTng's headers, with their sizes), two of them.
        header = bytearray(data[:37])
        packets = b""
        for part in (cut[:len(cut) // 2], cut[len(cut) // 2:]):
            struct.pack_into("<II", header, 24, (37 + len(part)) * 8, (37 + len(part)) * 8)
            packets += bytes(header) + part
        cut = packets
    metadata.write_bytes(cut)
    message = fails(trace)
    assert "damaged trace" in message and "ends inside a declaration" in message


def test_metadata_of_empty_packets_declares_no_stream(foo_bar_baz_ctf18, tmp_path):
    """LTTng's metadata switch timer may write a first packet with no declaration: cut
    there, the metadata is whole packets that declare nothing."""
    trace = copy_trace(foo_bar_baz_ctf18.path, tmp_path / "t")
    metadata = metadata_of(trace)
    data = metadata.read_bytes()
    if not is_packetized(data):
        pytest.skip("this LTTng writes CTF 1.8 metadata as plain text: no packets to empty")
    header = bytearray(data[:37])
    struct.pack_into("<II", header, 24, 37 * 8, 4096 * 8)
    metadata.write_bytes(bytes(header) + bytes(4096 - 37))
    message = fails(trace)
    assert "damaged trace" in message and "declares no data stream" in message
    assert str(metadata) in message


def test_truncated_text_metadata(foo_bar_baz_ctf18, tmp_path):
    trace = copy_trace(foo_bar_baz_ctf18.path, tmp_path / "t")
    metadata = metadata_of(trace)
    text = packet_contents(metadata.read_bytes())
    assert text.startswith(b"/* CTF 1.8")
    metadata.write_bytes(text)
    ok(trace, "-f", "folded")  # the whole text is a valid trace
    # Cut inside the last event's declaration (a cut between two declarations leaves
    # valid metadata that lacks events: babeltrace2 then stops at the first of them).
    metadata.write_bytes(text[:text.rindex(b"event {") + len(b"event {")])
    message = fails(trace)
    assert "damaged trace" in message and "ends inside a declaration" in message


def test_text_metadata_with_a_syntax_error(foo_bar_baz_ctf18, tmp_path):
    trace = copy_trace(foo_bar_baz_ctf18.path, tmp_path / "t")
    metadata = metadata_of(trace)
    text = packet_contents(metadata.read_bytes())
    assert b"packet.header := struct {" in text
    metadata.write_bytes(text.replace(b"packet.header := struct {", b"packet.header := strukt {", 1))
    assert "damaged trace: babeltrace2 cannot read it" in fails(trace)


def test_stream_files_without_one_complete_packet(foo_bar_baz, tmp_path):
    trace = copy_trace(foo_bar_baz.path, tmp_path / "t")
    for stream in stream_files(trace):
        stream.write_bytes(stream.read_bytes()[:100])
    assert "damaged trace: not one packet of its data streams is complete" in fails(trace)


def test_stream_files_with_garbage_events(foo_bar_baz, tmp_path):
    """The packet headers are intact, the events are not: what babeltrace2 could decode is
    reported, with a warning (tests/report/test_damaged_traces.py has more cases)."""
    trace = copy_trace(foo_bar_baz.path, tmp_path / "t")
    for stream in stream_files(trace):
        data = bytearray(stream.read_bytes())
        # Past the first packet's header, 0xff and 0x00 in turn: a string field the bytes
        # fall in ends at the first zero, and the next event header (0xff: an extended one)
        # names an event class no trace has. (Random bytes were not always garbage to
        # babeltrace2: on Debian 13 they once decoded as a python:process event of pid
        # 936384220, with nothing to warn about; all ones vanished into a string field.)
        data[100:1000] = b"\xff\x00" * 450
        stream.write_bytes(bytes(data))
    result = report(trace, timeout=BAD_INPUT_LIMIT * 3)
    assert result.seconds < BAD_INPUT_LIMIT
    assert result.returncode == 0, result.stderr
    assert "pyust: warning: damaged trace: babeltrace2 stopped reading after" in result.stderr
    assert "damaged trace: babeltrace2 cannot read it" in fails(trace, "--no-salvage")


def test_a_failed_run_keeps_the_previous_output(foo_bar_baz, tmp_path):
    trace = copy_trace(foo_bar_baz.path, tmp_path / "t")
    for stream in stream_files(trace):
        stream.write_bytes(stream.read_bytes()[:100])
    output = tmp_path / "out.svg"
    output.write_text("previous\n")
    fails(trace, "-f", "svg", "-o", output)
    assert output.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.svg", "t"]


def test_timeout_stops_babeltrace2(foo_bar_baz):
    assert "did not finish within 0.001 s" in fails(foo_bar_baz.path, "--timeout", "0.001")


def with_event_classes(source: Path, destination: Path, count: int) -> Path:
    """A copy of a CTF 1.8 trace whose metadata, as plain TSDL text, declares count more event
    classes (97 bytes each: 10**6 make 97 MB, as a damaged or hostile trace may hold)."""
    trace = copy_trace(source, destination)
    metadata = metadata_of(trace)
    extra = b"".join(b'event {\n\tname = "x:e%d";\n\tid = %d;\n\tstream_id = 0;\n\tfields := '
                     b'struct { string _s; };\n};\n\n' % (i, i) for i in range(1000, 1000 + count))
    metadata.write_bytes(packet_contents(metadata.read_bytes()) + extra)
    return trace


def test_metadata_past_16_mb_is_refused_unread(foo_bar_baz_ctf18, tmp_path):
    """Issue 26: babeltrace2 takes about 35 times the metadata's size in memory and, for many
    event classes, minutes (97 MB: 3.4 GB); a report refuses metadata past 16 MB at once."""
    trace = with_event_classes(foo_bar_baz_ctf18.path, tmp_path / "t", 180_000)
    message = fails(trace, "--timeout", "5")
    assert re.search(r"the metadata file \S+/metadata holds 17\.\d MB, more than a report "
                     r"reads \(16 MB\).*--max-metadata MB raises the limit, 0 for none", message)


def test_max_metadata_sets_the_bound(foo_bar_baz_ctf18, tmp_path):
    trace = with_event_classes(foo_bar_baz_ctf18.path, tmp_path / "t", 2_000)  # 0.2 MB
    assert "more than a report reads (0.1 MB)" in fails(trace, "--max-metadata", "0.1")
    assert "__main__:baz" in ok(trace, "--max-metadata", "0.3")


def test_timeout_covers_the_whole_report(foo_bar_baz_ctf18, tmp_path):
    """Issue 26: --timeout also bounds what pyust does before babeltrace2 runs (checking 40 MB
    of metadata, walking the packets: before, 17 s more than the timeout)."""
    trace = with_event_classes(foo_bar_baz_ctf18.path, tmp_path / "t", 412_000)
    message = fails(trace, "--max-metadata", "0", "--timeout", "1")
    assert message == ("pyust: error: pyust report did not finish within 1 s and was stopped: a "
                       "damaged trace, or a large one (raise --timeout; 0 for no limit)")


@pytest.mark.parametrize("args, expected", [
    (["--format", "pdf"], "invalid choice: 'pdf'"),
    (["--pid", "-3"], "bad id '-3'"),
    (["--tid", "abc"], "bad id 'abc'"),
    (["--min-duration", "5parsecs"], "bad duration '5parsecs'"),
    (["--min-duration", "1.5"], "bad duration '1.5'"),
    (["--from", "yesterday"], "bad time 'yesterday'"),
    (["--from", "2000", "--to", "1000"], "--from 2000 is after --to 1000"),
    (["--from", "2026-13-01 10:00"], "month must be in 1..12"),
    (["--modules", " , "], "--modules names no module"),
    (["--timeout", "-1"], "bad timeout '-1'"),
    (["-o", "/nonexistent-dir/out.svg"], "the directory /nonexistent-dir does not exist"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_parameters(foo_bar_baz, args, expected):
    result = report(foo_bar_baz.path, *args, timeout=BAD_INPUT_LIMIT * 3)
    assert result.seconds < BAD_INPUT_LIMIT
    assert expected in one_error_line(result)
    assert result.returncode == 2


def test_output_that_is_a_directory(foo_bar_baz, tmp_path):
    assert "is a directory" in fails(foo_bar_baz.path, "-o", tmp_path)


def test_plugin_path_that_does_not_exist(foo_bar_baz, tmp_path):
    env = child_env(PYUST_PLUGIN_PATH=str(tmp_path / "missing"))
    assert "PYUST_PLUGIN_PATH names" in fails(foo_bar_baz.path, env=env)


def test_no_trace_argument():
    result = report(timeout=BAD_INPUT_LIMIT * 3)
    assert "the following arguments are required: TRACE" in one_error_line(result)
    assert result.returncode == 2
