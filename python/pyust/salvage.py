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
the layout of every LTTng 2.x trace, user space and kernel, CTF 1.8 or CTF 2. The metadata
must declare exactly that layout, else nothing is walked and babeltrace2 alone decides.

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

# The members, in order, that make _HEADER: (name, bits, array length), every one an unsigned
# integer aligned on a byte; the four packet context members that follow it in every packet.
_HEADER_MEMBERS = [("magic", 32, None), ("uuid", 8, 16), ("stream_id", 32, None),
                   ("stream_instance_id", 64, None)]
_CONTEXT_MEMBERS = [(name, 64, None)
                    for name in ("timestamp_begin", "timestamp_end", "content_size", "packet_size")]
# One member of a TSDL structure once the text is folded: a type (an integer declaration or a
# name), the member's name, an array length.
_TSDL_MEMBER = re.compile(r"(integer\{[^}]*\}|\w+) ?(\w+)(?:\[(\d+)\])?;")


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
    """The packet layout the metadata text declares (CTF 1.8's TSDL or CTF 2's JSON text
    sequence), or None when it is not LTTng's."""
    if tsdl.startswith(b"\x1e"):
        return _layout_of_fragments(tsdl)
    # Comments out, whitespace folded, no space around punctuation: LTTng up to 2.14 declares
    # the integers once with typealiases, 2.15+ inline in each structure.
    text = re.sub(rb"/\*.*?\*/|//[^\n]*", b" ", tsdl, flags=re.S).decode("utf-8", "replace")
    text = re.sub(r" ?([{};:=\[\],]) ?", r"\1", " ".join(text.split()))
    aliases = dict((name, declaration) for declaration, name in
                   re.findall(r"\btypealias (integer\{[^}]*\}):=(\w+);", text))
    header = re.search(r"\btrace\{.*?\bpacket\.header:=struct\{((?:integer\{[^}]*\}|[^{}])*)\};",
                       text)
    if not header or _tsdl_members(header.group(1), aliases) != _HEADER_MEMBERS:
        return None
    named = dict(re.findall(r"\bstruct (\w+)\{((?:integer\{[^}]*\}|[^{}])*)\}", text))
    ids = []
    for stream_id, context in re.findall(
            r"\bstream\{id=(\d+);.*?\bpacket\.context:=struct ?(\{(?:integer\{[^}]*\}|"
            r"[^{}])*\}|\w+);", text):
        body = context[1:-1] if context.startswith("{") else named.get(context)
        if body is None or _tsdl_members(body, aliases)[:4] != _CONTEXT_MEMBERS:
            return None
        ids.append(int(stream_id))
    order = re.search(r"\btrace\{[^}]*?byte_order=(le|be|network);", text)
    trace_uuid = re.search(r'\btrace\{[^}]*?uuid="([0-9a-fA-F-]{36})";', text)
    if not order or not trace_uuid or not ids:
        return None
    try:
        trace_bytes = _uuid.UUID(trace_uuid.group(1)).bytes
    except ValueError:
        return None
    return Layout("<" if order.group(1) == "le" else ">", trace_bytes, frozenset(ids))


def _tsdl_members(body: str, aliases: dict) -> list:
    """(name, bits, array length) of a TSDL structure's members that are unsigned integers
    aligned on a byte (given inline or by a typealias); None in place of any other."""
    members = []
    for kind, name, length in _TSDL_MEMBER.findall(body):
        declaration = aliases.get(kind, kind)
        size = re.search(r"\bsize=(\d+);", declaration)
        if not declaration.startswith("integer{") or not size or \
                not re.search(r"\balign=8;", declaration) or \
                re.search(r"\bsigned=(?:true|1);", declaration):
            members.append(None)
            continue
        members.append((name, int(size.group(1)), int(length) if length else None))
    return members


# CTF 2: the members, in order, that make _HEADER (name, field class type, bits).
_JSON_HEADER = [("magic", "fixed-length-unsigned-integer", 32),
                ("uuid", "static-length-blob", 16 * 8),
                ("stream_id", "fixed-length-unsigned-integer", 32),
                ("stream_instance_id", "fixed-length-unsigned-integer", 64)]
_JSON_CONTEXT = [(name, "fixed-length-unsigned-integer", 64)
                 for name in ("timestamp_begin", "timestamp_end", "content_size", "packet_size")]


def _members(field_class) -> list:
    """(name, type, bits, byte order) of a structure field class's members."""
    members = []
    for member in (field_class or {}).get("member-classes", []):
        member_class = member.get("field-class", {})
        bits = member_class.get("length", 0) * (8 if member_class.get("type") ==
                                                "static-length-blob" else 1)
        members.append((member.get("name"), member_class.get("type"), bits,
                        member_class.get("byte-order")))
    return members


def _layout_of_fragments(text: bytes) -> Layout | None:
    import json

    try:
        fragments = [json.loads(part) for part in text.split(b"\x1e")[1:]]
    except ValueError:
        return None
    preamble = fragments[0] if fragments else {}
    trace_class = next((f for f in fragments if f.get("type") == "trace-class"), {})
    header = _members(trace_class.get("packet-header-field-class"))
    if [member[:3] for member in header] != _JSON_HEADER:
        return None
    orders = {member[3] for member in header if member[1] != "static-length-blob"}
    if orders not in ({"little-endian"}, {"big-endian"}):
        return None
    ids = []
    for stream_class in (f for f in fragments if f.get("type") == "data-stream-class"):
        context = _members(stream_class.get("packet-context-field-class"))
        if [member[:3] for member in context[:4]] != _JSON_CONTEXT or \
                {member[3] for member in context[:4]} != orders:
            return None
        ids.append(stream_class.get("id", 0))
    uuid = preamble.get("uuid")
    if not ids or not isinstance(uuid, list) or len(uuid) != 16:
        return None
    return Layout("<" if orders == {"little-endian"} else ">", bytes(uuid), frozenset(ids))


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
