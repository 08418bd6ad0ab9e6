// Diagnostics (see diagnostics.hpp): the text of each line.
#include "plugin/expand/diagnostics.hpp"

#include "plugin/expand/streams.hpp"

namespace pyust::plugin::expand {

void Diagnostics::late(std::uint64_t count, std::int64_t pid, std::int64_t tid,
                       bool has_horizon) noexcept
{
    m_late_records += count;
    if (!m_warned_late)
        m_log.write(BT_LOGGING_LEVEL_WARNING,
                    "filter.pyust.expand: %llu records of pid %lld, tid %lld came after "
                    "their time was released (%s); they are reported as discarded events "
                    "(further ones are counted at the end)\n",
                    static_cast<unsigned long long>(count), static_cast<long long>(pid),
                    static_cast<long long>(tid),
                    has_horizon ? "the process's horizon lagged by more than max-delay"
                                : "the trace has no python:horizon event: enable "
                                  "python:*");
    m_warned_late = true;
}

void Diagnostics::stale(std::int64_t pid, std::int64_t max_delay) noexcept
{
    if (!m_warned_stale)
        m_log.write(BT_LOGGING_LEVEL_WARNING,
                    "filter.pyust.expand: the horizon of pid %lld lags the trace by "
                    "more than max-delay (%lld ns): its later records may be reported "
                    "as discarded instead of put in order\n",
                    static_cast<long long>(pid), static_cast<long long>(max_delay));
    m_warned_stale = true;
}

void Diagnostics::report_dropped(const bt_stream* stream)
{
    m_log.write(BT_LOGGING_LEVEL_WARNING,
                "filter.pyust.expand: a discarded-events report of stream "
                "%s is dropped: the stream is not open at its time\n",
                stream_name(stream).c_str());
}

void Diagnostics::unplaced(std::int64_t pid, std::int64_t tid) noexcept
{
    ++m_unplaced_records;
    if (!m_warned_unplaced)
        m_log.write(BT_LOGGING_LEVEL_WARNING,
                    "filter.pyust.expand: a record of pid %lld, tid %lld falls where no "
                    "stream of its class has an open packet: dropped (further ones are "
                    "counted at the end)\n",
                    static_cast<long long>(pid), static_cast<long long>(tid));
    m_warned_unplaced = true;
}

void Diagnostics::malformed(const std::string& fault, const bt_stream* stream, std::uint64_t index,
                            const BatchHeader& header)
{
    ++m_malformed_batches;
    m_malformed_records += header.count;
    if (!m_warned_malformed)
        m_log.write(BT_LOGGING_LEVEL_WARNING,
                    "filter.pyust.expand: skipping a malformed python:batch (%s): "
                    "stream=%s, "
                    "event index=%llu, pid=%lld, tid=%lld, count=%u; its records are "
                    "reported as discarded events (further ones are counted at the "
                    "end)\n",
                    fault.c_str(), stream_name(stream).c_str(),
                    static_cast<unsigned long long>(index), static_cast<long long>(header.pid),
                    static_cast<long long>(header.tid), header.count);
    m_warned_malformed = true;
}

void Diagnostics::not_reported(std::uint64_t count, const char* why, const bt_stream* stream,
                               bool is_report_discarded)
{
    if (!m_warned_no_discarded)
        m_log.write(BT_LOGGING_LEVEL_WARNING,
                    "filter.pyust.expand: %llu %s records on stream %s are not reported "
                    "as "
                    "discarded events (%s); further ones are counted at the end\n",
                    static_cast<unsigned long long>(count), why, stream_name(stream).c_str(),
                    is_report_discarded ? "its stream class has none" : "report-discarded=no");
    m_warned_no_discarded = true;
}

void Diagnostics::summarize() const noexcept
{
    if (m_lost_records + m_malformed_batches + m_late_records + m_unplaced_records == 0)
        return;
    m_log.write(BT_LOGGING_LEVEL_WARNING,
                "filter.pyust.expand: records missing from the expanded trace: "
                "%llu lost by "
                "the tracer, %llu in %llu malformed batches, %llu too late to "
                "put in order, "
                "%llu with no open packet\n",
                static_cast<unsigned long long>(m_lost_records),
                static_cast<unsigned long long>(m_malformed_records),
                static_cast<unsigned long long>(m_malformed_batches),
                static_cast<unsigned long long>(m_late_records),
                static_cast<unsigned long long>(m_unplaced_records));
}

} // namespace pyust::plugin::expand
