// The record format of python:batch (tracepoints/python_tp.h), decoded without
// babeltrace2: a batch's header and its bytes in, the call, return and line
// records with their times out. filter.pyust.expand turns them into
// python:call/return/line event messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pyust::plugin::expand {

enum class RecordKind : std::uint8_t { call, ret, ret_unwind, line };

// One decoded record. decode_records() sets value to the record's time on the
// batch's clock (LTTng's, in ns); the filter then replaces it by the stream
// clock's cycles and sets time.
struct Record {
    std::int64_t time = 0;   // ns from the clock's origin (set by the filter)
    std::uint64_t value = 0; // the record's time as a clock value
    std::uint64_t id = 0;    // the code id
    std::uint32_t line = 0;  // line records only
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

// Appends the records of a batch to out, in their order (which is time order).
// Returns an empty string when the batch is well formed, else what is wrong
// with it (then out holds what was decoded before the fault: the caller drops
// it). Throws std::bad_alloc.
std::string decode_records(const BatchHeader& header, const std::uint8_t* data, std::size_t size,
                           std::vector<Record>& out);

} // namespace pyust::plugin::expand
