// The records of python:batch (tracepoints/python_tp.h; their layout:
// tracepoints/batch_records.hpp), decoded without babeltrace2: a batch's header
// and its bytes in, the call, return, line, task, task step and task end
// records with their times out. filter.pyust.expand turns them into
// python:call/return/line/task/task_step/task_end event messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "batch_records.hpp"

namespace pyust::plugin::expand {

// A record's kind, as its head has it (a task step or end: as its head and id have it).
enum class RecordKind : std::uint8_t {
    call = batch_records::k_call,
    ret = batch_records::k_return,
    ret_unwind = batch_records::k_unwind,
    line = batch_records::k_line,
    task_step,
    task_end,
    task,
};

// One decoded record. RecordReader::next() sets value to the record's time on the
// batch's clock (LTTng's, in ns); the filter then replaces it by the stream
// clock's cycles and sets time.
struct Record {
    std::int64_t time = 0;      // ns from the clock's origin (set by the filter)
    std::uint64_t value = 0;    // the record's time as a clock value
    std::uint64_t id = 0;       // the code id (0 for a task step, 1 for a task end, 2 a task)
    std::uint64_t task = 0;     // tasks, task steps and ends only: the task's key;
    std::uint64_t parent = 0;   // a task's: its creator's key,
    const char* name = nullptr; // its name, name_size bytes in the batch's (no terminator);
    std::uint32_t name_size = 0;
    std::uint64_t awaited_id = 0; // a step's: what its suspension waited on (python_tp.h),
    std::uint32_t resumed = 0;    // how many frames it resumes,
    std::uint8_t awaited = 0;     // what kind of thing its suspension waited on,
    std::uint8_t thrown = 0;      // whether an exception thrown in resumes its innermost frame;
    std::uint8_t state = 0;       // an end's: how the task ended
    std::uint32_t line = 0;       // line records only
    RecordKind kind = RecordKind::call;
};

// The fixed fields of a python:batch event.
struct BatchHeader {
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    std::uint64_t first = 0;
    std::uint32_t count = 0;
    std::uint32_t id_high = 0;
    std::uint64_t begin_tsc = 0;
    std::uint64_t begin_ns = 0;
    std::uint64_t end_tsc = 0;
    std::uint64_t end_ns = 0;
};

// The time of a record taken at record-clock reading tsc: header.begin_ns plus
// tsc's advance over begin_tsc scaled to the ns the batch's two clock readings
// span, clamped to [begin_ns, end_ns]. Precondition: end_ns >= begin_ns,
// end_tsc >= begin_tsc. noexcept.
std::uint64_t record_ns(const BatchHeader& header, std::uint64_t tsc) noexcept;

// Reads the records of one batch, in their order (which is time order), one at
// a time: the filter keeps a waiting batch's bytes (about 3 per record) rather
// than its decoded records (32 bytes each). Views the bytes: they must outlive
// the reader and stay put.
class RecordReader {
public:
    RecordReader() = default;
    RecordReader(const BatchHeader& header, const std::uint8_t* data, std::size_t size) noexcept;

    // Decodes the next record into record: true, or false at the end of the
    // bytes or at a fault (then fault() says what). noexcept.
    bool next(Record& record) noexcept;
    // What is wrong with the bytes read so far, or null. noexcept.
    const char* fault() const noexcept { return m_fault; }
    // How many records next() returned. noexcept.
    std::uint64_t decoded() const noexcept { return m_decoded; }

private:
    BatchHeader m_header;
    const std::uint8_t* m_at = nullptr;
    const std::uint8_t* m_end = nullptr;
    std::uint64_t m_tsc = 0;
    std::uint64_t m_decoded = 0;
    const char* m_fault = nullptr;
};

// Reads a whole batch: an empty string when it is well formed, else what is
// wrong with it (and at which record). Throws std::bad_alloc.
std::string check_records(const BatchHeader& header, const std::uint8_t* data, std::size_t size);

} // namespace pyust::plugin::expand
