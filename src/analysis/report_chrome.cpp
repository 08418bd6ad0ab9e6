// The chrome format: Chrome Trace Event JSON (Perfetto, chrome://tracing, speedscope), streamed
// by ChromeWriter as the model closes frames. An asyncio task's frames go to a lane of their
// own, named by the task, with its awaits as slices "await <what>" between its steps.
#include <string>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

namespace {

std::string json_string(const std::string& text)
{
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20)
                out += printf_string("\\u%04x", c);
            else
                out += c;
        }
    }
    return out + '"';
}

} // namespace

ChromeWriter::ChromeWriter(const StackModel& model, std::ostream& out, Timestamp min_duration,
                           std::uint64_t max_bytes)
    : m_model(model), m_out(out), m_min_duration(min_duration), m_max_bytes(max_bytes)
{
    m_out << "{\"traceEvents\":[";
}

void ChromeWriter::separate()
{
    m_out << (m_is_first ? "\n" : ",\n");
    m_is_first = false;
}

void ChromeWriter::on_frame_closed(const Thread& thread, const Frame& frame, Timestamp begin,
                                   Timestamp end)
{
    if (keeps(begin, end))
        write_slice(m_model.label(frame.id),
                    frame.id.is_kernel ? "kernel"
                    : frame.id.is_c    ? "c"
                                       : "python",
                    begin, end, thread.key().pid, lane(thread, frame.task));
}

void ChromeWriter::on_await(const Thread& thread, std::uint32_t task, AwaitKind kind,
                            Timestamp begin, Timestamp end)
{
    if (keeps(begin, end))
        write_slice(kind == AwaitKind::unknown ? "await (until the trace's end)"
                                               : std::string("await ") + await_kind_name(kind),
                    "await", begin, end, thread.key().pid, lane(thread, task));
}

std::int64_t ChromeWriter::lane(const Thread& thread, std::uint32_t task)
{
    if (task == no_task)
        return thread.key().tid;
    if (task >= m_lanes.size())
        m_lanes.resize(task + 1, false);
    m_lanes[task] = true;
    return task_lane_base + task;
}

bool ChromeWriter::keeps(Timestamp begin, Timestamp end)
{
    if (end - begin < m_min_duration)
        return false;
    // Past the size limit, only the frames open when it was reached are still written (at
    // most the depth of each stack): the timeline up to that time stays whole.
    if (m_is_cutting && begin >= m_first_cut) {
        ++m_cut;
        return false;
    }
    return true;
}

void ChromeWriter::write_slice(const std::string& name, const char* category, Timestamp begin,
                               Timestamp end, std::int64_t pid, std::int64_t tid)
{
    m_event = "{\"name\":";
    m_event += json_string(name);
    m_event += ",\"cat\":\"";
    m_event += category;
    m_event += "\",\"ph\":\"X\",\"ts\":";
    m_event += printf_string("%.3f", static_cast<double>(begin - m_origin) / 1e3);
    m_event += ",\"dur\":";
    m_event += printf_string("%.3f", static_cast<double>(end - begin) / 1e3);
    m_event += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + '}';
    if (m_max_bytes && !m_is_cutting && m_bytes + m_event.size() > m_max_bytes) {
        // This frame is still written; from now on, only the frames open at its end are.
        m_is_cutting = true;
        m_first_cut = end;
    }
    separate();
    m_bytes += m_event.size() + 2;
    ++m_written;
    m_out << m_event;
}

void ChromeWriter::finish(const StreamNamer& stream_name, const ReportOptions& options)
{
    std::vector<std::string> notes;
    for (const auto& [pid, gap] : m_model.lost_starts())
        notes.push_back(lost_start_note(options, pid, gap));
    for (const std::int64_t pid : traced_pids(m_model)) {
        separate();
        m_out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << pid
              << ",\"args\":{\"name\":" << json_string(process_title(options, pid)) << "}}";
    }
    // A lane per task, named by the task, after its thread's (sorted by creation).
    const auto& tasks = m_model.tasks();
    for (std::uint32_t task = 0; task < m_lanes.size() && task < tasks.size(); ++task) {
        if (!m_lanes[task])
            continue;
        const std::string where = "\"pid\":" + std::to_string(tasks[task].thread.pid) +
                                  ",\"tid\":" + std::to_string(task_lane_base + task);
        separate();
        m_out << "{\"name\":\"thread_name\",\"ph\":\"M\"," << where << ",\"args\":{\"name\":"
              << json_string(tasks[task].name.empty() ? "(unnamed coroutine)" : tasks[task].name)
              << "}}";
        separate();
        m_out << "{\"name\":\"thread_sort_index\",\"ph\":\"M\"," << where
              << ",\"args\":{\"sort_index\":" << task + 1 << "}}";
    }
    for (const Thread* thread : m_model.threads()) {
        if (!thread->name().empty()) {
            separate();
            m_out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << thread->key().pid
                  << ",\"tid\":" << thread->key().tid
                  << ",\"args\":{\"name\":" << json_string(thread->name()) << "}}";
        }
        for (const Gap& gap : thread->gaps())
            notes.push_back(thread_title(*thread, options) + ": " + gap_kind_name(gap.kind) + " (" +
                            std::to_string(gap.count) + "), from " + format_time(gap.begin) +
                            " to " + format_time(gap.end));
    }
    for (const auto& [stream, gaps] : m_model.stream_gaps())
        for (const Gap& gap : gaps)
            notes.push_back("stream " + stream_name(stream) + ": " + gap_kind_name(gap.kind) +
                            " (" + std::to_string(gap.count) + "), from " + format_time(gap.begin) +
                            " to " + format_time(gap.end));
    m_out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"origin\":"
          << json_string(format_time(m_origin)) << ",\"incomplete\":[";
    for (std::size_t i = 0; i < notes.size(); ++i)
        m_out << (i ? "," : "") << json_string(notes[i]);
    m_out << "]";
    if (m_cut)
        m_out << ",\"cut\":" << json_string(cut_note());
    m_out << "}}\n";
}

std::string ChromeWriter::cut_note() const
{
    return thousands(m_cut) + " frames that started at or after +" +
           format_duration(m_first_cut - m_origin) + " were left out: the output reached " +
           printf_string("%g", static_cast<double>(m_max_bytes) / 1e6) + " MB with " +
           thousands(m_written) +
           " frames (the timeline is whole before that time; --max-size sets the limit, 0 for "
           "none, --min-duration leaves out short frames instead)";
}

} // namespace pyust::analysis
