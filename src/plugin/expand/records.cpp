// Decoding of python:batch records (see records.hpp).
#include "records.hpp"

namespace pyust::plugin::expand {

namespace {

__extension__ typedef unsigned __int128 Wide;

// Reads an unsigned LEB128 varint at *at (advancing it). Returns null, or what is
// wrong: the bytes end before the varint does, or it does not fit 64 bits.
const char* read_varint(const std::uint8_t*& at, const std::uint8_t* end,
                        std::uint64_t& value) noexcept
{
    value = 0;
    for (unsigned shift = 0; at < end; shift += 7) {
        const std::uint8_t byte = *at++;
        if (shift == 63 && byte > 1)
            return "a varint exceeds 64 bits";
        value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return nullptr;
    }
    return "truncated record";
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

RecordReader::RecordReader(const BatchHeader& header, const std::uint8_t* data,
                           std::size_t size) noexcept
    : m_header(header), m_at(data), m_end(data + size), m_tsc(header.begin_tsc)
{
    if (header.end_ns < header.begin_ns || header.end_tsc < header.begin_tsc)
        m_fault = "time goes backwards (end_ns < begin_ns or end_tsc < begin_tsc)";
}

bool RecordReader::next(Record& record) noexcept
{
    if (m_fault || m_at >= m_end)
        return false;
    std::uint64_t head = 0;
    std::uint64_t id = 0;
    m_fault = read_varint(m_at, m_end, head);
    if (!m_fault)
        m_fault = read_varint(m_at, m_end, id);
    if (m_fault)
        return false;
    const unsigned kind = head & 7;
    const std::uint64_t advance = head >> 3;
    if (m_tsc + advance < m_tsc) {
        m_fault = "the record clock overflows";
        return false;
    }
    m_tsc += advance;
    record.kind = static_cast<RecordKind>(kind & 3);
    if (kind < 4) {
        if (id > 0xffffffffu) {
            m_fault = "a near id exceeds 32 bits";
            return false;
        }
        id |= static_cast<std::uint64_t>(m_header.id_high) << 32;
    }
    record.id = id;
    record.line = 0;
    if (record.kind == RecordKind::line) {
        std::uint64_t line = 0;
        if ((m_fault = read_varint(m_at, m_end, line)))
            return false;
        if (line > 0xffffffffu) {
            m_fault = "a line number exceeds 32 bits";
            return false;
        }
        record.line = static_cast<std::uint32_t>(line);
    }
    record.value = record_ns(m_header, m_tsc);
    record.time = 0;
    ++m_decoded;
    return true;
}

std::string check_records(const BatchHeader& header, const std::uint8_t* data, std::size_t size)
{
    RecordReader reader(header, data, size);
    Record record;
    while (reader.next(record)) {
    }
    if (reader.fault()) {
        std::string fault = reader.fault();
        if (header.end_ns >= header.begin_ns && header.end_tsc >= header.begin_tsc)
            fault += " at index " + std::to_string(reader.decoded());
        return fault;
    }
    if (reader.decoded() != header.count)
        return "count mismatch: count=" + std::to_string(header.count) +
               ", records=" + std::to_string(reader.decoded());
    return {};
}

} // namespace pyust::plugin::expand
