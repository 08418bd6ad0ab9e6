// The byte encoding of the fast mode's records (tracepoints/python_tp.h documents the
// format), on its own so that the unit tests can round-trip the hook's encoder through
// the plugin's decoder (src/plugin/expand/records.hpp): header-only, no Python, no LTTng.
//
// A record is a varint of (time advance << 3 | kind), then the code id as a varint (its
// low 32 bits when its high half is the batch's id_high, all 64 bits with k_far), then,
// for a line, the line number as a varint. Every function is noexcept and writes at most
// k_max_record bytes from out, which the caller must have room for.
#pragma once

#include <cstdint>

namespace pyust::hook::records {

enum Kind : std::uint64_t { k_call = 0, k_return = 1, k_unwind = 2, k_line = 3, k_far = 4 };

// The longest record: a 10-byte first varint (a long pause), a 10-byte id and a 5-byte
// line.
constexpr std::uint32_t k_max_record = 25;

// LEB128: 7 bits a byte, least significant first, the high bit set on all but the last.
inline std::uint8_t* put_varint(std::uint8_t* out, std::uint64_t value) noexcept
{
    while (value >= 0x80) {
        *out++ = static_cast<std::uint8_t>(value | 0x80);
        value >>= 7;
    }
    *out++ = static_cast<std::uint8_t>(value);
    return out;
}

// A record's kind, time advance (record-clock ticks since the batch's previous record)
// and code id, for a batch whose near ids have id_high as their high half; returns where
// a line record's line number goes (put_varint), or the record's end.
inline std::uint8_t* put_record(std::uint8_t* out, Kind kind, std::uint64_t advance,
                                std::uint64_t id, std::uint32_t id_high) noexcept
{
    if ((id >> 32) == id_high) {
        out = put_varint(out, advance << 3 | kind);
        return put_varint(out, id & 0xffffffffu);
    }
    out = put_varint(out, advance << 3 | kind | k_far);
    return put_varint(out, id);
}

} // namespace pyust::hook::records
