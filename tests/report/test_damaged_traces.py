"""Damaged traces (issue 7): every reader answers within damage_corpus.LIMIT seconds, never
crashes, and never drops data without saying so; `pyust report` salvages the complete
packets and says what it left out.

The corpus and its checks are in pyusttest.damage_corpus (which also runs as a script, e.g.
under AddressSanitizer). The default run takes the truncations, the metadata cases and 16 bit
flips; the marker `stress` adds the 500 seeded bit flips.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from pyusttest import damage_corpus as corpus
from pyusttest.report import report

QUICK_FLIPS = range(16)
STRESS_FLIPS = range(500)


@pytest.fixture(scope="module", params=["ctf-1.8", "ctf-2"])
def recorded(request, tmp_path_factory):
    """A real trace of corpus.PROGRAM, several packets per stream, in each CTF version the
    installed LTTng writes (CTF 2: LTTng 2.15 and later, as `pyust run` finds out)."""
    try:
        return corpus.record(tmp_path_factory.mktemp("damage"), trace_format=request.param)
    except RuntimeError as error:
        if "writes CTF 1.8 only" in str(error):
            pytest.skip(f"{request.param}: this LTTng cannot write it ({error})")
        raise


@pytest.fixture(scope="module")
def plugin_path():
    return corpus.default_plugin_path()


def assert_case(recorded, case, tmp_path, plugin_path):
    outcome = corpus.run_case(recorded, case, tmp_path, plugin_path, {})
    print(f"{outcome.case}: {outcome.verdict}, {outcome.seconds:.2f} s; {outcome.what}")
    assert not outcome.problems, "\n".join(outcome.problems)
    return outcome


@pytest.mark.parametrize("index", range(5))
def test_truncated_last_packet_is_salvaged(recorded, tmp_path, plugin_path, index):
    case = corpus.truncation_cases(recorded)[index]
    assert assert_case(recorded, case, tmp_path, plugin_path).verdict == "salvaged"


@pytest.mark.parametrize("index", range(7))
def test_damaged_metadata(recorded, tmp_path, plugin_path, index):
    case = corpus.metadata_cases(recorded)[index]
    outcome = assert_case(recorded, case, tmp_path, plugin_path)
    assert outcome.verdict in case.expected.split("|")


@pytest.mark.parametrize("seed", QUICK_FLIPS)
def test_bit_flip(recorded, tmp_path, plugin_path, seed):
    assert_case(recorded, corpus.flip_case(recorded, seed), tmp_path, plugin_path)


@pytest.mark.stress
@pytest.mark.parametrize("seed", STRESS_FLIPS)
def test_bit_flip_stress(recorded, tmp_path, plugin_path, seed):
    assert_case(recorded, corpus.flip_case(recorded, seed), tmp_path, plugin_path)


def _copy(recorded, tmp_path):
    copy = tmp_path / "t"
    shutil.copytree(recorded, copy)
    return copy


def _calls(profile):
    """The calls that a `--merge-processes` profile counts (its first line says them)."""
    return sum(int(count) for count in re.findall(r"^.*?: (\d+) calls of ", profile, re.M))


def test_salvage_says_which_packets_it_left_out(recorded, tmp_path):
    copy = _copy(recorded, tmp_path)
    stream = max(corpus.stream_files(copy), key=lambda p: p.stat().st_size)
    offsets = corpus.packet_offsets(stream)
    with open(stream, "r+b") as file:
        file.truncate(offsets[-1] + 100)
    whole = report(recorded, "-f", "profile", "--merge-processes")
    salvaged = report(copy, "-f", "profile", "--merge-processes")
    assert whole.returncode == 0 and salvaged.returncode == 0, salvaged.stderr
    warning = next(line for line in salvaged.stderr.splitlines() if "damaged trace" in line)
    assert f"{stream}: packet {len(offsets)} (byte {offsets[-1]}) is cut off" in warning
    assert f"its first {len(offsets) - 1} packets ({offsets[-1]} bytes) are read" in warning
    # Counted in calls, not time: a frame whose return was in the cut packet stays open to
    # the end of the trace, so the salvaged report can hold more time than the whole one.
    total, kept = (_calls(result.stdout) for result in (whole, salvaged))
    # The complete packets are there, the cut one is not (its events may all be another
    # program's, which the session recorded too: hence <=).
    assert 0 < kept <= total, (kept, total)

    refused = report(copy, "--no-salvage")
    assert refused.returncode == 1
    assert refused.stderr.startswith("pyust: error: damaged trace: ")
    assert refused.stderr.count("\n") == 1


def test_an_event_babeltrace2_cannot_decode_ends_the_report_there(recorded, tmp_path,
                                                                   plugin_path):
    """An unknown event class id in the middle of a stream: babeltrace2 stops there; the
    report covers what came before and says where and why it stopped."""
    copy = _copy(recorded, tmp_path)
    stream = max(corpus.stream_files(copy), key=lambda p: p.stat().st_size)
    offsets = corpus.packet_offsets(stream)
    data = bytearray(stream.read_bytes())
    # The first event of the middle packet: right after the 84 bytes of packet header and
    # context; its header starts with the 16-bit event class id, whose value 65535 says that
    # a 32-bit id and a 64-bit timestamp follow.
    struct.pack_into("<HI", data, offsets[len(offsets) // 2] + 84, 0xFFFF, 123456789)
    stream.write_bytes(bytes(data))

    result = report(copy)
    assert result.returncode == 0, result.stderr
    assert "\nDamaged trace: babeltrace2 stopped reading after " in result.stdout
    (warning,) = [line for line in result.stderr.splitlines() if "damaged trace" in line]
    match = re.match(r"pyust: warning: damaged trace: babeltrace2 stopped reading after "
                     r"(\d+) events \(the latest at \d+\.\d{9}\): (.*); nothing the trace "
                     r"holds after that point is in this report\.$", warning)
    assert match, warning
    assert int(match.group(1)) > 0
    # babeltrace2's own reason names the unknown id (2.0: event-class-id=N; 2.1: "no event
    # record class exists with ID N"), without its internal addresses.
    assert "123456789" in match.group(2) and "addr=0x" not in match.group(2)

    cli = ["babeltrace2", "--plugin-path", plugin_path, str(copy), "-c", "sink.pyust.report"]
    plain = subprocess.run(cli, capture_output=True, text=True, timeout=corpus.LIMIT)
    assert plain.returncode == 1 and "123456789" in plain.stderr
    salvaged = subprocess.run(cli + ["-p", "salvage=yes"], capture_output=True, text=True,
                              timeout=corpus.LIMIT)
    assert salvaged.returncode == 0, salvaged.stderr
    assert "Damaged trace: babeltrace2 stopped reading after" in salvaged.stdout
