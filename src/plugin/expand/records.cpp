// Decoding of python:batch records (see records.hpp).
#include "records.hpp"

#include <algorithm>

namespace pyust::plugin::expand {

namespace {

__extension__ typedef unsigned __int128 Wide;

// Reads an unsigned LEB128 varint at *at (advancing it). Returns false when the
// bytes end before the varint does or it does not fit 64 bits.
bool read_varint(const std::uint8_t*& at, const std::uint8_t* end, std::uint64_t& value) noexcept
{
    value = 0;
    for (unsigned shift = 0; at < end; shift += 7) {
        const std::uint8_t byte = *at++;
        if (shift == 63 && byte > 1)
            return false; // more than 64 bits
        value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

} // namespace

std::uint64_t record_ns(const BatchHeader& header, std::uint64_t tsc) noexcept
{
    if (header.end_tsc == header.begin_tsc || tsc <= header.begin_tsc)
        return header.begin_ns;
    const Wide advance = static_cast<Wide>(tsc - header.begin_tsc) *
                         (header.end_ns - header.begin_ns) / (header.end_tsc - header.begin_tsc);
    return advance >= header.end_ns - header.begin_ns
               ? header.end_ns
               : header.begin_ns + static_cast<std::uint64_t>(advance);
}

std::string decode_records(const BatchHeader& header, const std::uint8_t* data, std::size_t size,
                           std::vector<Record>& out)
{
    if (header.end_ns < header.begin_ns || header.end_tsc < header.begin_tsc)
        return "time goes backwards (end_ns < begin_ns or end_tsc < begin_tsc)";
    // A bogus count must not reserve gigabytes: a record takes 2 bytes at least.
    out.reserve(out.size() + std::min<std::size_t>(header.count, size / 2));
    const std::uint8_t* at = data;
    const std::uint8_t* const end = data + size;
    std::uint64_t tsc = header.begin_tsc;
    std::uint64_t decoded = 0;
    while (at < end) {
        std::uint64_t head = 0;
        std::uint64_t id = 0;
        if (!read_varint(at, end, head) || !read_varint(at, end, id))
            return "truncated record at index " + std::to_string(decoded);
        const unsigned kind = head & 7;
        const std::uint64_t advance = head >> 3;
        if (tsc + advance < tsc)
            return "the record clock overflows at index " + std::to_string(decoded);
        tsc += advance;
        Record record;
        record.kind = static_cast<RecordKind>(kind & 3);
        if (kind < 4) {
            if (id > 0xffffffffu)
                return "a near id exceeds 32 bits at index " + std::to_string(decoded);
            id |= static_cast<std::uint64_t>(header.id_high) << 32;
        }
        record.id = id;
        if (record.kind == RecordKind::line) {
            std::uint64_t line = 0;
            if (!read_varint(at, end, line))
                return "truncated record at index " + std::to_string(decoded);
            if (line > 0xffffffffu)
                return "a line number exceeds 32 bits at index " + std::to_string(decoded);
            record.line = static_cast<std::uint32_t>(line);
        }
        record.value = record_ns(header, tsc);
        out.push_back(record);
        ++decoded;
    }
    if (decoded != header.count)
        return "count mismatch: count=" + std::to_string(header.count) +
               ", records=" + std::to_string(decoded);
    return {};
}

} // namespace pyust::plugin::expand
