"""Reading CTF traces' files on disk: finding the metadata files of a trace, checking that
one is complete, and the clocks it declares, for both formats LTTng writes:

- CTF 1.8 (LTTng up to 2.14, and 2.15+ when asked): TSDL text, plain (starting with
  "/* CTF 1.8") or in packets (each with a header: magic, UUID, sizes, version);
- CTF 2 (LTTng 2.15+ by default): an RFC 7464 JSON text sequence, each fragment (a
  preamble, the trace class, clock classes, data stream and event record classes) after an
  ASCII RS byte (0x1E).

The data streams are babeltrace2's business (and salvage.py's, for damaged packets). This
module is a leaf of the package: it imports nothing of pyust's, raises CtfError with a
sentence for the user, and never runs babeltrace2.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass

METADATA_MAGIC = 0x75D11D57
# uint32 magic, uint8 uuid[16], uint32 checksum, content_size, packet_size (bits), then
# uint8 compression, encryption and checksum schemes, major, minor (CTF 1.8, section 7.1).
_PACKET_HEADER = "I16sIII5B"
_TEXT_START = b"/* CTF 1.8"
_RECORD_SEPARATOR = b"\x1e"  # RFC 7464: before every JSON text of the sequence
# A TSDL token that matters for balance: a comment, a string or character literal, an
# unclosed one of those, or a brace.
_TSDL_TOKEN = re.compile(
    rb"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|(/\*|\"|')|([{}])", re.S)
_TSDL_CLOCK = re.compile(rb"\bclock\s*\{([^{}]*)\}")
_TSDL_COMMENT = re.compile(rb"/\*.*?\*/", re.S)
_TSDL_STREAM = re.compile(rb"\bstream\s*\{")


class CtfError(Exception):
    """A trace file that is missing, unreadable, damaged or not CTF: the message says which
    and why, in words for the user."""


class MetadataTooLarge(CtfError):
    """A metadata file larger than the reader was told to read (its size in bytes)."""

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


@dataclass
class Clock:
    """A clock the metadata declares: value v (cycles) is v / frequency s after the clock's
    origin plus its offset."""

    name: str
    frequency: int  # Hz; 0 when the metadata gives none
    offset_seconds: int
    offset_cycles: int

    def offset_ns(self) -> int:
        frequency = self.frequency or 10**9
        return self.offset_seconds * 10**9 + self.offset_cycles * 10**9 // frequency


@dataclass
class Metadata:
    """One metadata file's text (packets joined) and its CTF version ("1.8" or "2")."""

    path: str
    version: str
    text: bytes

    def fragments(self) -> list:
        """CTF 2: the metadata's JSON objects, in order ([] for CTF 1.8)."""
        if self.version != "2":
            return []
        return [json.loads(part) for part in self.text.split(_RECORD_SEPARATOR)[1:]]

    def clocks(self) -> list:
        """The clocks (clock classes) the metadata declares, in order."""
        if self.version == "2":
            clocks = []
            for fragment in self.fragments():
                if fragment.get("type") != "clock-class":
                    continue
                offset = fragment.get("offset-from-origin") or {}
                clocks.append(Clock(str(fragment.get("name", fragment.get("id", ""))),
                                    _integer(fragment.get("frequency")),
                                    _integer(offset.get("seconds")),
                                    _integer(offset.get("cycles"))))
            return clocks
        clocks = []
        for block in _TSDL_CLOCK.finditer(_TSDL_COMMENT.sub(b" ", self.text)):
            body = block.group(1)
            clocks.append(Clock(_tsdl_value(body, rb"name", rb"\"?([\w.]+)\"?").decode(),
                                int(_tsdl_value(body, rb"freq", rb"(0[xX][0-9a-fA-F]+|\d+)")
                                    or b"0", 0),
                                int(_tsdl_value(body, rb"offset_s", rb"(-?\d+)") or b"0"),
                                int(_tsdl_value(body, rb"offset", rb"(-?\d+)") or b"0")))
        return clocks


def _integer(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _tsdl_value(body: bytes, name: bytes, pattern: bytes) -> bytes:
    found = re.search(rb"\b" + name + rb"\s*=\s*" + pattern + rb"\s*;", body)
    return found.group(1) if found else b""


def find_metadata(trace: str) -> list:
    """The metadata files in and below a trace directory (sorted). Raises CtfError when
    trace is not a directory holding at least one."""
    if not os.path.exists(trace):
        raise CtfError(f"no such trace directory: {trace}")
    if not os.path.isdir(trace):
        raise CtfError(f"{trace} is not a directory: give a trace directory (the -o of "
                       "`pyust run`, or an LTTng session's output)")
    found = []
    is_empty = True

    def refuse(error: OSError) -> None:
        raise CtfError(f"cannot read {error.filename}: {error.strerror}")

    for directory, subdirs, files in os.walk(trace, onerror=refuse):
        subdirs.sort()
        is_empty = is_empty and not files and not subdirs
        if "metadata" in files:
            found.append(os.path.join(directory, "metadata"))
    if is_empty:
        raise CtfError(f"{trace} is empty: not a trace")
    if not found:
        raise CtfError(f"{trace} is not a CTF trace: no metadata file in it or below")
    return found


def read_metadata(path: str, max_bytes: int = 0) -> Metadata:
    """The metadata file at path, unchecked beyond its packets (a live trace's metadata
    may still be growing). Raises CtfError when it cannot be read or is not CTF, and
    MetadataTooLarge when it holds more than max_bytes (0: no limit), read no further."""
    try:
        with open(path, "rb") as file:
            data = file.read(max_bytes + 1 if max_bytes else -1)
            size = os.fstat(file.fileno()).st_size
    except OSError as error:
        raise CtfError(f"cannot read the metadata file {path}: {error.strerror}") from None
    if max_bytes and len(data) > max_bytes:
        size = max(size, len(data))
        raise MetadataTooLarge(f"the metadata file {path} holds {size / 1e6:.1f} MB, more than "
                               f"the {max_bytes / 1e6:g} MB a reader is allowed (a damaged or "
                               "hostile trace, or a huge one)", size)
    if not data:
        raise CtfError(f"damaged trace: the metadata file {path} is empty")
    order = next((o for o in "<>" if data[:4] == struct.pack(o + "I", METADATA_MAGIC)), None)
    text = _packet_contents(path, data, order) if order else data
    if text.startswith(_RECORD_SEPARATOR):
        return Metadata(path, "2", text)
    if order or text.startswith(_TEXT_START):
        return Metadata(path, "1.8", text)
    raise CtfError(f"not a CTF trace: {path} is neither packetized metadata (magic "
                   f"0x{METADATA_MAGIC:08x}), nor text starting with '{_TEXT_START.decode()}' "
                   "(CTF 1.8), nor a JSON text sequence (CTF 2)")


def check_metadata(path: str, max_bytes: int = 0) -> Metadata:
    """The metadata file at path, once checked complete: every packet inside the file (no
    compression, encryption or checksum); for CTF 1.8, declarations closed (braces,
    comments, strings); for CTF 2, every fragment a JSON object, a preamble of version 2
    first; a non-zero frequency for every clock (babeltrace2 2.0.4 divides by it). Raises
    CtfError naming what is wrong (MetadataTooLarge past max_bytes, 0: no limit)."""
    metadata = read_metadata(path, max_bytes)
    if metadata.version == "2":
        declares_streams = "data-stream-class" in _check_json_sequence(path, metadata.text)
    else:
        _check_tsdl(path, metadata.text)
        declares_streams = _TSDL_STREAM.search(_TSDL_COMMENT.sub(b"", metadata.text)) is not None
    if not declares_streams:
        # Whole packets, cut before the streams (LTTng may write a first packet with no
        # declaration at all): babeltrace2 would blame a data stream file.
        raise CtfError(f"damaged trace (truncated?): the metadata of {path} declares no data "
                       "stream (it ends before its stream declarations)")
    for clock in metadata.clocks():
        if clock.frequency <= 0:
            raise CtfError(f"damaged trace: the metadata of {path} declares a clock without a "
                           "frequency (babeltrace2 cannot read it)")
    return metadata


def _packet_contents(path: str, data: bytes, order: str) -> bytes:
    header = struct.Struct(order + _PACKET_HEADER)
    contents = []
    offset = 0
    while offset < len(data):
        where = f"the metadata file {path}, packet at byte {offset}"
        if len(data) - offset < header.size:
            raise CtfError(f"damaged trace (truncated?): {where}: its header is cut off "
                           f"at byte {len(data)}")
        magic, _uuid, _checksum, content_bits, packet_bits, compression, encryption, \
            checksum_scheme, major, minor = header.unpack_from(data, offset)
        if magic != METADATA_MAGIC:
            raise CtfError(f"damaged trace: {where}: bad magic 0x{magic:08x} "
                           f"(expected 0x{METADATA_MAGIC:08x})")
        if (major, minor) not in ((1, 8), (2, 0)):
            raise CtfError(f"unsupported trace: {where}: CTF {major}.{minor} (expected 1.8 or 2)")
        if compression or encryption or checksum_scheme:
            raise CtfError(f"unsupported trace: {where}: compressed, encrypted or "
                           "checksummed metadata")
        if packet_bits % 8 or content_bits % 8 or not \
                header.size * 8 <= content_bits <= packet_bits:
            raise CtfError(f"damaged trace: {where}: impossible sizes (content "
                           f"{content_bits} bits, packet {packet_bits} bits)")
        content_end = offset + content_bits // 8
        if content_end > len(data):
            raise CtfError(f"damaged trace (truncated?): {where}: {content_bits // 8} bytes "
                           f"of content, but the file ends at byte {len(data)}")
        contents.append(data[offset + header.size:content_end])
        offset += packet_bits // 8  # the last packet's padding may be cut off
    return b"".join(contents)


def _check_tsdl(path: str, text: bytes) -> None:
    depth = 0
    for match in _TSDL_TOKEN.finditer(text):
        unclosed, brace = match.groups()
        if unclosed:
            raise CtfError(f"damaged trace (truncated?): the metadata of {path} ends in an "
                           "unclosed comment or string")
        if brace == b"{":
            depth += 1
        elif brace == b"}":
            depth -= 1
            if depth < 0:
                raise CtfError(f"damaged trace: the metadata of {path} closes a brace it "
                               "never opened")
    if depth:
        raise CtfError(f"damaged trace (truncated?): the metadata of {path} ends inside a "
                       "declaration (unclosed '{')")


def _check_json_sequence(path: str, text: bytes) -> set:
    """The types of the fragments, once each is checked."""
    types = set()
    parts = text.split(_RECORD_SEPARATOR)[1:]
    for number, part in enumerate(parts, 1):
        try:
            fragment = json.loads(part)
        except ValueError as error:  # also a UnicodeDecodeError
            if number == len(parts):
                raise CtfError(f"damaged trace (truncated?): the metadata of {path} ends inside "
                               f"its fragment {number} (not complete JSON: {error})") from None
            raise CtfError(f"damaged trace: fragment {number} of the metadata of {path} is not "
                           f"JSON ({error})") from None
        if not isinstance(fragment, dict) or not isinstance(fragment.get("type"), str):
            raise CtfError(f"damaged trace: fragment {number} of the metadata of {path} is not "
                           "a CTF 2 fragment (a JSON object with a type)")
        if number == 1 and (fragment["type"] != "preamble" or fragment.get("version") != 2):
            raise CtfError(f"unsupported trace: the metadata of {path} does not start with a "
                           "CTF 2 preamble (version 2)")
        types.add(fragment["type"])
    return types
