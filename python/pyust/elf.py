"""An ELF file's symbols, read as data: what `pyust attach` learns of another
process's interpreter without running anything of it (pyust.remote).

The file may be anybody's, and hostile: it is read through an open descriptor
with os.pread, every offset and size it states is checked against the file's
own size and a bound before anything is read, and a file that is not a well
formed ELF (32 or 64 bits, either byte order) simply has no symbols.
"""

from __future__ import annotations

import os
import stat
import struct

# The most pyust reads of one table (section headers, a symbol table, its
# strings): CPython's own are well under a megabyte.
_TABLE_LIMIT = 64 << 20

_SHT_SYMTAB, _SHT_DYNSYM, _SHT_NOBITS = 2, 11, 8
_SHN_UNDEF, _SHN_LORESERVE = 0, 0xFF00


class Symbol:
    """A symbol the file defines: its address, its size, where its bytes are in
    the file (None: in no section with file contents, .bss), and the file's byte
    order ("little" or "big")."""

    def __init__(self, value: int, size: int, offset: int | None, byte_order: str):
        self.value = value
        self.size = size
        self.offset = offset
        self.byte_order = byte_order


def defined_symbols(fd: int, names: set) -> dict:
    """The symbols among names that the regular file open at fd defines, in its
    dynamic symbol table or its symbol table: {name: Symbol}. Empty when fd is no
    regular file or no ELF. Raises OSError for a failed read."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return {}
    try:
        return _Reader(fd, info.st_size).symbols({name.encode() for name in names})
    except ValueError:  # not an ELF pyust can read, or a damaged one
        return {}


def read_unsigned(fd: int, symbol: Symbol) -> int | None:
    """The unsigned integer (1 to 8 bytes) that a symbol's object holds in the file
    open at fd, or None when it is no such integer or the file holds no bytes of
    it. Raises OSError."""
    if symbol.offset is None or symbol.size not in (1, 2, 4, 8):
        return None
    data = os.pread(fd, symbol.size, symbol.offset)
    return int.from_bytes(data, symbol.byte_order) if len(data) == symbol.size else None


class _Reader:
    """One ELF file's headers and tables; raises ValueError for what is out of bounds."""

    def __init__(self, fd: int, file_size: int):
        self.fd = fd
        self.file_size = file_size
        ident = self._read(0, 16)
        if ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ValueError("not an ELF file")
        self.wide = ident[4] == 2
        self.order = "<" if ident[5] == 1 else ">"
        if self.wide:
            header = self._unpack("HHIQQQIHHHHHH", 16)
        else:
            header = self._unpack("HHIIIIIHHHHHH", 16)
        self.section_offset = header[5]
        self.section_entry, count = header[10], header[11]
        if count == 0 or self.section_entry < (64 if self.wide else 40):
            raise ValueError("no section headers")
        self.section_count = count

    def _read(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or size > _TABLE_LIMIT or offset + size > self.file_size:
            raise ValueError("out of the file")
        data = os.pread(self.fd, size, offset)
        if len(data) != size:
            raise ValueError("the file is shorter than it says")
        return data

    def _unpack(self, layout: str, offset: int) -> tuple:
        layout = self.order + layout
        return struct.unpack(layout, self._read(offset, struct.calcsize(layout)))

    def _sections(self) -> list:
        """(type, address, offset, size, link, entry size) of every section."""
        table = self._read(self.section_offset, self.section_count * self.section_entry)
        layout = self.order + ("IIQQQQIIQQ" if self.wide else "IIIIIIIIII")
        sections = []
        for index in range(self.section_count):
            (_, kind, _, address, offset, size, link, _, _,
             entry) = struct.unpack_from(layout, table, index * self.section_entry)
            sections.append((kind, address, offset, size, link, entry))
        return sections

    def symbols(self, wanted: set) -> dict:
        sections = self._sections()
        found = {}
        for kind, _, offset, size, link, entry in sections:
            if kind not in (_SHT_DYNSYM, _SHT_SYMTAB) or not 0 < link < len(sections):
                continue
            strings_kind, _, strings_offset, strings_size = sections[link][:4]
            if strings_kind == _SHT_NOBITS:
                continue
            try:
                table = self._read(offset, size)
                strings = self._read(strings_offset, strings_size)
            except ValueError:
                continue  # this table is damaged; another may not be
            layout = self.order + ("IBBHQQ" if self.wide else "IIIBBH")
            width = struct.calcsize(layout)
            if entry < width:
                continue
            for start in range(0, len(table) - width + 1, entry):
                fields = struct.unpack_from(layout, table, start)
                if self.wide:
                    name, _, _, index, value, length = fields
                else:
                    name, value, length, _, _, index = fields
                if index == _SHN_UNDEF or index >= min(_SHN_LORESERVE, len(sections)):
                    continue
                end = strings.find(b"\0", name)
                if end < 0 or strings[name:end] not in wanted:
                    continue
                key = strings[name:end].decode()
                if key in found:
                    continue
                found[key] = Symbol(value, length,
                                    self._file_offset(sections[index], value, length),
                                    "little" if self.order == "<" else "big")
        return found

    def _file_offset(self, section: tuple, value: int, length: int) -> int | None:
        kind, address, offset, size = section[:4]
        if kind == _SHT_NOBITS or not address <= value or value + length > address + size:
            return None
        return offset + value - address
