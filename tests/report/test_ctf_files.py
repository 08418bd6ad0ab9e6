"""pyust.ctf and its users on CTF 2 metadata (LTTng 2.15+), which LTTng 2.13 cannot write:
the metadata here is written by the test in LTTng 2.16's shape (a JSON text sequence, RFC
7464), so that the readers are tested on every machine. Real CTF 2 traces, recorded and
damaged, are tested by test_damaged_traces.py where the installed LTTng writes them."""

from __future__ import annotations

import importlib
import json
import sys
import time

import pytest

from pyusttest.environment import PYUST_PATH

sys.path.insert(0, PYUST_PATH)
ctf = importlib.import_module("pyust.ctf")
kernel = importlib.import_module("pyust.kernel")
salvage = importlib.import_module("pyust.salvage")
sys.path.remove(PYUST_PATH)

UUID = list(range(16))


def u(bits, *roles):
    return {"type": "fixed-length-unsigned-integer", "length": bits, "alignment": 8,
            "byte-order": "little-endian", "roles": list(roles)}


def members(*pairs):
    return {"type": "structure",
            "member-classes": [{"name": name, "field-class": fc} for name, fc in pairs]}


FRAGMENTS = [
    {"type": "preamble", "version": 2, "uuid": UUID},
    {"type": "trace-class", "packet-header-field-class": members(
        ("magic", u(32, "packet-magic-number")),
        ("uuid", {"type": "static-length-blob", "length": 16}),
        ("stream_id", u(32)), ("stream_instance_id", u(64)))},
    {"type": "clock-class", "id": "monotonic", "name": "monotonic", "frequency": 1000000000,
     "offset-from-origin": {"seconds": 1795468570, "cycles": 710625086}, "origin": "unix-epoch"},
    {"type": "data-stream-class", "id": 0, "default-clock-class-id": "monotonic",
     "packet-context-field-class": members(
         ("timestamp_begin", u(64)), ("timestamp_end", u(64)), ("content_size", u(64)),
         ("packet_size", u(64)), ("cpu_id", u(32)))},
    {"type": "event-record-class", "id": 1, "name": "python:call", "data-stream-class-id": 0},
]


def sequence(fragments) -> bytes:
    return b"".join(b"\x1e" + json.dumps(f, indent=2).encode() + b"\n" for f in fragments)


@pytest.fixture
def trace(tmp_path):
    directory = tmp_path / "ust" / "uid" / "0" / "64-bit"
    directory.mkdir(parents=True)
    (directory / "metadata").write_bytes(sequence(FRAGMENTS))
    return tmp_path


def test_ctf2_metadata_is_read_with_its_clock(trace):
    (path,) = ctf.find_metadata(str(trace))
    metadata = ctf.check_metadata(path)
    assert metadata.version == "2"
    (clock,) = metadata.clocks()
    assert (clock.name, clock.frequency) == ("monotonic", 10**9)
    assert clock.offset_ns() == 1795468570_710625086


def test_kernel_alignment_takes_lttngs_clock_from_ctf2_metadata(trace):
    offset, source = kernel.lttng_clock_offset(str(trace))
    assert offset == 1795468570_710625086
    assert source.startswith("LTTng's")


def test_salvage_knows_lttngs_packet_layout_in_ctf2(trace):
    (path,) = ctf.find_metadata(str(trace))
    layout = salvage.layout(ctf.check_metadata(path).text)
    assert layout is not None
    assert (layout.byte_order, layout.uuid, layout.stream_ids) == ("<", bytes(UUID),
                                                                    frozenset({0}))
    # Another packet header than LTTng's: nothing is walked (babeltrace2 alone decides).
    other = json.loads(json.dumps(FRAGMENTS))
    other[1]["packet-header-field-class"]["member-classes"].pop(3)
    assert salvage.layout(sequence(other)) is None


@pytest.mark.parametrize("damage, message", [
    (lambda data: data[:len(data) // 2], r"damaged trace \(truncated\?\): the metadata of .* "
     r"ends inside its fragment \d"),
    (lambda data: data[:-3], "ends inside its fragment 5"),
    (lambda data: data.replace(b'"type": "trace-class"', b'"type": trace-class"'),
     "damaged trace: fragment 2 of the metadata of .* is not JSON"),
    (lambda data: data.replace(b'"preamble"', b'"preambel"'),
     "unsupported trace: the metadata of .* does not start with a CTF 2 preamble"),
    (lambda data: data.replace(b'"frequency"', b'"frequencx"'),
     "declares a clock without a frequency"),
    (lambda data: b"\x1e" + b"[1, 2]\n" + data, "fragment 1 of the metadata of .* is not a "
     "CTF 2 fragment"),
    (lambda data: b"{" + data, "not a CTF trace: .* nor a JSON text sequence"),
])
def test_damaged_ctf2_metadata_is_refused_in_a_sentence(trace, damage, message):
    (path,) = ctf.find_metadata(str(trace))
    with open(path, "rb") as file:
        data = file.read()
    with open(path, "wb") as file:
        file.write(damage(data))
    began = time.monotonic()
    with pytest.raises(ctf.CtfError, match=message) as error:
        ctf.check_metadata(path)
    assert time.monotonic() - began < 10
    assert "\n" not in str(error.value)


def test_tsdl_clock_is_read_with_inline_or_split_offsets(tmp_path):
    # LTTng up to 2.14: offset_s and offset in cycles; 2.15+'s CTF 1.8: offset alone.
    for body, expected in [(b"offset_s = 3; offset = 500;", 3_000_000_500),
                           (b"offset = 1795468570710625086;", 1795468570_710625086)]:
        path = tmp_path / "metadata"
        path.write_bytes(b'/* CTF 1.8 */\ntrace { major = 1; minor = 8; };\nclock {\n'
                         b'\tname = "monotonic";\n\tfreq = 1000000000;\n\t' + body + b"\n};\n"
                         b"stream { id = 0; };\n")
        (clock,) = ctf.check_metadata(str(path)).clocks()
        assert clock.offset_ns() == expected
