"""Finding the damaged packets of a trace's data streams, and a copy without them.

babeltrace2 2.0.4's src.ctf.fs indexes every packet of every data stream file before it
reads anything: one packet cut off by the end of its file (a full disk, a copy that
stopped, a crash of the consumer daemon) or with an impossible header makes the whole
trace unreadable, although every packet before it is intact. `pyust report` walks the
packet headers itself first; when a stream file has a damaged packet, it builds a copy of
the trace in which that file ends before that packet (its index file left out, so that
babeltrace2 indexes the shortened file itself) and reads the copy instead, saying which
packets it left out.

Only the packet header and context of LTTng's layout are read (magic, UUID, stream class
id, then timestamp_begin, timestamp_end, content_size and packet_size as 64-bit integers):
the layout of every LTTng 2.x trace, user space and kernel. The metadata must declare
exactly that layout, else nothing is walked and babeltrace2 alone decides.

Nothing is repaired: a packet is kept whole or left out, with every packet after it in
its file (where the next packet starts cannot be trusted once a header is wrong).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import tempfile
import uuid as _uuid
from dataclasses import dataclass

PACKET_MAGIC = 0xC1FC1FC1
# magic, uuid, stream_id, stream_instance_id, timestamp_begin, timestamp_end, content_size,
# packet_size: what LTTng writes first in every packet.
_HEADER = "I16sIQQQQQ"
_HEADER_SIZE = struct.calcsize("<" + _HEADER)

# What the metadata must say for _HEADER to be the packet layout (TSDL, whitespace folded).
_LAYOUT = [
    r"typealias integer\{size=32;align=8;signed=(?:false|0);\}:=uint32_t;",
    r"typealias integer\{size=64;align=8;signed=(?:false|0);\}:=uint64_t;",
    r"typealias integer\{size=64;align=8;signed=(?:false|0);"
    r"map=clock\.\w+\.value;\}:=uint64_clock_\w+_t;",
    r"packet\.header:=struct\{uint32_t magic;uint8_t uuid\[16\];uint32_t stream_id;"
    r"uint64_t stream_instance_id;\};",
    r"struct packet_context\{uint64_clock_\w+_t timestamp_begin;"
    r"uint64_clock_\w+_t timestamp_end;uint64_t content_size;uint64_t packet_size;",
]


@dataclass
class Layout:
    """What the packets of one metadata directory must hold."""

    byte_order: str  # "<" or ">"
    uuid: bytes  # 16 bytes
    stream_ids: frozenset


@dataclass
class Damage:
    """The first damaged packet of one data stream file."""

    path: str  # the stream file
    offset: int  # where the damaged packet starts: the bytes kept
    size: int  # the file's size
    packets_kept: int
    reason: str
    complete_until: int | None  # timestamp_end of the last packet kept (clock cycles)

    def describe(self) -> str:
        """One sentence for the user: which packet, why, what is left out."""
        dropped = self.size - self.offset
        kept = (f"its first {self.packets_kept} packet{'s' if self.packets_kept != 1 else ''} "
                f"({self.offset} bytes) are read" if self.packets_kept
                else "nothing of it is read")
        return (f"{self.path}: packet {self.packets_kept + 1} (byte {self.offset}) {self.reason}; "
                f"{kept}, the {dropped} bytes from there on are left out")


def layout(tsdl: bytes) -> Layout | None:
    """The packet layout the metadata text declares, or None when it is not LTTng's."""
    text = " ".join(re.sub(rb"/\*.*?\*/", b" ", tsdl, flags=re.S).decode(
        "utf-8", "replace").split())
    text = re.sub(r" ?([{};:=\[\]]) ?", r"\1", text)
    if not all(re.search(pattern, text) for pattern in _LAYOUT):
        return None
    order = re.search(r"\btrace\{[^}]*?byte_order=(le|be|network);", text)
    trace_uuid = re.search(r'\btrace\{[^}]*?uuid="([0-9a-fA-F-]{36})";', text)
    ids = re.findall(r"\bstream\{id=(\d+);", text)
    contexts = re.findall(r"\bpacket\.context:=([^;]*);", text)
    if not order or not trace_uuid or not ids or any(c != "struct packet_context"
                                                      for c in contexts):
        return None
    try:
        trace_bytes = _uuid.UUID(trace_uuid.group(1)).bytes
    except ValueError:
        return None
    return Layout("<" if order.group(1) == "le" else ">", trace_bytes,
                  frozenset(int(i) for i in ids))


def stream_files(directory: str) -> list:
    """The data stream files beside a metadata file (sorted)."""
    return sorted(os.path.join(directory, name) for name in os.listdir(directory)
                  if name != "metadata" and not name.startswith(".") and
                  os.path.isfile(os.path.join(directory, name)))


def first_damage(path: str, packets: Layout) -> Damage | None:
    """Walks the packets of one stream file: the first damaged one, or None."""
    header = struct.Struct(packets.byte_order + _HEADER)
    size = os.path.getsize(path)
    offset = kept = 0
    stream_id = None
    previous_begin = None
    complete_until = None
    with open(path, "rb") as file:
        while offset < size:
            file.seek(offset)
            data = file.read(header.size)
            reason = None
            if len(data) < header.size:
                reason = (f"is cut off by the end of the file in its header ({len(data)} of "
                          f"{header.size} bytes)")
            else:
                magic, packet_uuid, packet_stream, _instance, begin, end, content_bits, \
                    packet_bits = header.unpack(data)
                packet_bytes = packet_bits // 8
                if magic != PACKET_MAGIC:
                    reason = f"has a bad magic number 0x{magic:08x}"
                elif packet_uuid != packets.uuid:
                    reason = "has a UUID that is not the trace's"
                elif packet_stream not in packets.stream_ids or \
                        stream_id not in (None, packet_stream):
                    reason = f"names stream class {packet_stream}, not this file's"
                elif packet_bits % 8 or not header.size * 8 <= content_bits <= packet_bits:
                    reason = (f"has impossible sizes (content {content_bits} bits, packet "
                              f"{packet_bits} bits)")
                elif offset + packet_bytes > size:
                    reason = (f"is cut off by the end of the file ({size - offset} of its "
                              f"{packet_bytes} bytes)")
                # An end of 0: a packet never closed, such as the sub-buffer being
                # written when the tracer crashed, as lttng-crash extracts it.
                elif (end and begin > end) or (previous_begin is not None and
                                               begin < previous_begin):
                    reason = "has timestamps out of order"
            if reason:
                return Damage(path, offset, size, kept, reason, complete_until)
            stream_id = packet_stream
            previous_begin = begin
            complete_until = end or begin
            offset += packet_bytes
            kept += 1
    return None


def find_damage(metadata: dict) -> tuple:
    """The damaged stream files of the traces, and whether any packet at all is left to
    read: metadata maps each metadata file to its TSDL text. Directories whose layout is not
    LTTng's are not walked (their streams count as readable)."""
    damages = []
    is_readable = False
    for path, tsdl in metadata.items():
        packets = layout(tsdl)
        streams = stream_files(os.path.dirname(path))
        if packets is None:
            is_readable = is_readable or bool(streams)
            continue
        for stream in streams:
            damage = first_damage(stream, packets)
            if damage:
                damages.append(damage)
            is_readable = is_readable or damage is None or damage.packets_kept > 0
    return damages, is_readable


def salvaged_copy(traces: list, damages: list, into: str) -> list:
    """Mirrors each trace directory under into (a new empty directory): every file a
    symbolic link to the original, except the damaged stream files, copied up to their
    damaged packet, and their index files, left out. Returns the copies' paths, in the
    order of traces."""
    cut = {os.path.realpath(d.path): d for d in damages}
    copies = []
    for number, trace in enumerate(traces):
        trace = os.path.realpath(trace)
        copy = os.path.join(into, str(number))
        for directory, subdirs, files in os.walk(trace):
            subdirs.sort()
            target = os.path.join(copy, os.path.relpath(directory, trace))
            os.makedirs(target, exist_ok=True)
            for name in files:
                source = os.path.join(directory, name)
                damage = cut.get(source)
                if damage:
                    _copy_prefix(source, os.path.join(target, name), damage.offset)
                elif not _is_index_of(source, cut):
                    os.symlink(source, os.path.join(target, name))
        copies.append(copy)
    return copies


def _is_index_of(path: str, cut: dict) -> bool:
    """Whether path is the LTTng index file (index/NAME.idx) of a damaged stream file."""
    directory, name = os.path.split(path)
    if os.path.basename(directory) != "index" or not name.endswith(".idx"):
        return False
    return os.path.join(os.path.dirname(directory), name[:-len(".idx")]) in cut


def _copy_prefix(source: str, destination: str, length: int) -> None:
    with open(source, "rb") as reader, open(destination, "wb") as writer:
        remaining = length
        while remaining:
            chunk = reader.read(min(remaining, 1 << 20))
            if not chunk:
                break
            writer.write(chunk)
            remaining -= len(chunk)


def temporary_directory() -> str:
    """A new private directory for a salvaged copy (the caller removes it)."""
    return tempfile.mkdtemp(prefix="pyust-salvage-")


def remove(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)


__all__ = ["Damage", "Layout", "find_damage", "first_damage", "layout", "salvaged_copy"]
