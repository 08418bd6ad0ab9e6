// What filter.pyust.expand tells about the records missing from its output: one line on standard
// error the first time each kind happens, the counts, and their sum at the end. Every line is a
// warning (log.hpp): babeltrace2's CLI shows it unless --log-level asks for less. pyust report
// passes these lines on to the user (it runs the CLI at its default level), and
// tests/plugin/test_expand.py reads them.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <string>

#include "plugin/common/log.hpp"
#include "plugin/expand/records.hpp"

namespace pyust::plugin::expand {

class Diagnostics {
public:
    // Lines go to log. noexcept.
    explicit Diagnostics(const Log& log) noexcept : m_log(log) {}

    // count records of pid/tid came after their time was released (has_horizon: the trace has
    // python:horizon events, so the process's horizon lagged). Counted; the first time, a line.
    // noexcept.
    void late(std::uint64_t count, std::int64_t pid, std::int64_t tid, bool has_horizon) noexcept;

    // The horizon of pid lags the trace by more than max_delay: a line, the first time only.
    // noexcept.
    void stale(std::int64_t pid, std::int64_t max_delay) noexcept;

    // A discarded-events message of ours on stream is dropped: the stream is not open at its
    // time. A line each time. Throws std::bad_alloc.
    void report_dropped(const bt_stream* stream);

    // A record of pid/tid has no open packet to go into: counted; the first time, a line.
    // noexcept.
    void unplaced(std::int64_t pid, std::int64_t tid) noexcept;

    // A malformed python:batch (fault says what is wrong), the index-th event of its stream,
    // is skipped: counted with its records; the first time, a line. Throws std::bad_alloc.
    void malformed(const std::string& fault, const bt_stream* stream, std::uint64_t index,
                   const BatchHeader& header);

    // count records were lost by the tracer (a gap in a thread's sequence). noexcept.
    void lost(std::uint64_t count) noexcept { m_lost_records += count; }

    // count records (why: "lost", "malformed", "late") on stream are not reported as discarded
    // events (is_report_discarded: its stream class has none; else report-discarded=no): a
    // line, the first time only. Throws std::bad_alloc.
    void not_reported(std::uint64_t count, const char* why, const bt_stream* stream,
                      bool is_report_discarded);

    // The line that sums up what is missing, if anything is. noexcept.
    void summarize() const noexcept;

private:
    Log m_log;
    std::uint64_t m_lost_records = 0;
    std::uint64_t m_malformed_batches = 0;
    std::uint64_t m_malformed_records = 0;
    std::uint64_t m_late_records = 0;
    std::uint64_t m_unplaced_records = 0;
    bool m_warned_stale = false;
    bool m_warned_malformed = false;
    bool m_warned_late = false;
    bool m_warned_unplaced = false;
    bool m_warned_no_discarded = false;
};

} // namespace pyust::plugin::expand
