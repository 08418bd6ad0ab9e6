// Decoding of python:batch records (see records.hpp; their layout: tracepoints/batch_records.hpp).
#include "plugin/expand/records.hpp"

namespace pyust::plugin::expand {

namespace {

__extension__ typedef unsigned __int128 Wide;

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
    m_fault = batch_records::read_varint(m_at, m_end, head);
    if (!m_fault)
        m_fault = batch_records::read_varint(m_at, m_end, id);
    if (m_fault)
        return false;
    const batch_records::Kind kind = batch_records::kind_of(head);
    const std::uint64_t advance = batch_records::advance_of(head);
    if (m_tsc + advance < m_tsc) {
        m_fault = "the record clock overflows";
        return false;
    }
    m_tsc += advance;
    record.kind = static_cast<RecordKind>(kind);
    if (!batch_records::is_far(head)) {
        if (id > batch_records::k_max_near_id) {
            m_fault = "a near id exceeds 32 bits";
            return false;
        }
        id = batch_records::near_id(m_header.id_high, id);
    }
    record.id = id;
    record.line = 0;
    record.task = 0;
    record.parent = 0;
    record.name = nullptr;
    record.name_size = 0;
    if (batch_records::is_task_step(head, id)) {
        record.kind = RecordKind::task_step;
        std::uint64_t resumed = 0;
        std::uint64_t awaited = 0;
        std::uint64_t thrown = 0;
        if ((m_fault = batch_records::read_varint(m_at, m_end, record.task)) ||
            (m_fault = batch_records::read_varint(m_at, m_end, resumed)) ||
            (m_fault = batch_records::read_varint(m_at, m_end, awaited)) ||
            (m_fault = batch_records::read_varint(m_at, m_end, record.awaited_id)) ||
            (m_fault = batch_records::read_varint(m_at, m_end, thrown)))
            return false;
        if (resumed > 0xffffffffu || awaited > batch_records::k_max_awaited ||
            thrown > batch_records::k_max_thrown) {
            m_fault = "a task step's resumed, awaited or thrown is out of range";
            return false;
        }
        record.resumed = static_cast<std::uint32_t>(resumed);
        record.awaited = static_cast<std::uint8_t>(awaited);
        record.thrown = static_cast<std::uint8_t>(thrown);
    } else if (batch_records::is_task_end(head, id)) {
        record.kind = RecordKind::task_end;
        std::uint64_t state = 0;
        if ((m_fault = batch_records::read_varint(m_at, m_end, record.task)) ||
            (m_fault = batch_records::read_varint(m_at, m_end, state)))
            return false;
        if (state > batch_records::k_max_state) {
            m_fault = "a task end's state is out of range";
            return false;
        }
        record.state = static_cast<std::uint8_t>(state);
    } else if (batch_records::is_task(head, id)) {
        record.kind = RecordKind::task;
        std::uint64_t size = 0;
        if ((m_fault = batch_records::read_varint(m_at, m_end, record.task)) ||
            (m_fault = batch_records::read_varint(m_at, m_end, record.parent)) ||
            (m_fault = batch_records::read_varint(m_at, m_end, size)))
            return false;
        if (size > batch_records::k_max_task_name) {
            m_fault = "a task's name is longer than a record's";
            return false;
        }
        if (size > static_cast<std::uint64_t>(m_end - m_at)) {
            m_fault = "truncated record";
            return false;
        }
        record.name = reinterpret_cast<const char*>(m_at);
        record.name_size = static_cast<std::uint32_t>(size);
        m_at += size;
    } else if (batch_records::has_line(kind)) {
        std::uint64_t line = 0;
        if ((m_fault = batch_records::read_varint(m_at, m_end, line)))
            return false;
        if (line > batch_records::k_max_line) {
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
