// The top format: per-function statistics of a running program (function_snapshot) and the
// table `pyust top` refreshes from two snapshots (write_top).
#include <algorithm>
#include <cinttypes>
#include <ctime>
#include <tuple>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

FunctionTable function_snapshot(const StackModel& model, Timestamp now)
{
    FunctionTable table = model.functions();
    std::vector<FrameId> outer; // the ids already open further out on this thread
    for (const Thread* thread : model.threads()) {
        const std::vector<Frame>& frames = thread->frames();
        outer.clear();
        for (std::size_t i = 0; i < frames.size(); ++i) {
            const Frame& frame = frames[i];
            const Timestamp total = std::max<Timestamp>(0, now - frame.begin);
            const Timestamp open_child =
                i + 1 < frames.size() ? std::max<Timestamp>(0, now - frames[i + 1].begin) : 0;
            FunctionStats& stats = table[frame.id];
            stats.self_ns += std::max<Timestamp>(0, total - frame.child_ns - open_child);
            if (std::find(outer.begin(), outer.end(), frame.id) == outer.end()) {
                stats.total_ns += total;
                outer.push_back(frame.id);
            }
        }
    }
    return table;
}

void write_top(const StackModel& model, const FunctionTable& before, const FunctionTable& after,
               const TopFrame& frame, std::ostream& out)
{
    struct Row {
        FrameId id;
        FunctionStats interval; // after - before
        FunctionStats since;    // after
    };
    std::vector<Row> rows;
    for (const auto& [id, now] : after) {
        FunctionStats interval = now;
        if (const auto it = before.find(id); it != before.end()) {
            // An open frame's time counted in before may have been shortened since (a
            // mismatched return closed it earlier): never show a negative time.
            interval.calls = now.calls - std::min(now.calls, it->second.calls);
            interval.self_ns = std::max<Timestamp>(0, now.self_ns - it->second.self_ns);
            interval.total_ns = std::max<Timestamp>(0, now.total_ns - it->second.total_ns);
        }
        if (interval.self_ns || interval.total_ns || interval.calls || now.self_ns)
            rows.push_back(Row{id, interval, now});
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        return std::make_tuple(-a.interval.self_ns, -a.since.self_ns, a.id.value) <
               std::make_tuple(-b.interval.self_ns, -b.since.self_ns, b.id.value);
    });
    const Timestamp length = frame.end - frame.begin;
    std::size_t threads = 0;
    for (const Thread* thread : model.threads())
        threads += thread->event_count() != 0 && thread->last_ts() >= frame.begin;
    const std::time_t seconds = static_cast<std::time_t>(frame.end / 1000000000);
    std::tm local{};
    char clock[16] = "?";
    if (localtime_r(&seconds, &local))
        std::strftime(clock, sizeof clock, "%H:%M:%S", &local);
    out << "pyust top: " << clock
        << printf_string(".%03d", static_cast<int>(frame.end % 1000000000 / 1000000)) << ", last "
        << format_duration(std::max<Timestamp>(0, length)) << ": " << frame.events
        << (frame.events == 1 ? " event, " : " events, ") << threads
        << (threads == 1 ? " thread" : " threads") << " active\n\n";
    out << printf_string("%7s %10s %10s %8s %12s %10s  %s\n", "%self", "self_ms", "total_ms",
                         "ncalls", "cum_self_ms", "cum_calls", "function (file:line)");
    const std::size_t shown = frame.max_rows ? std::min(frame.max_rows, rows.size()) : rows.size();
    for (std::size_t i = 0; i < shown; ++i) {
        const Row& row = rows[i];
        const double share = length > 0 ? 100.0 * static_cast<double>(row.interval.self_ns) /
                                              static_cast<double>(length)
                                        : 0.0;
        out << printf_string("%7.1f %10s %10s %8" PRIu64 " %12s %10" PRIu64 "  ", share,
                             format_ms(row.interval.self_ns).c_str(),
                             format_ms(row.interval.total_ns).c_str(), row.interval.calls,
                             format_ms(row.since.self_ns).c_str(), row.since.calls)
            << model.label(row.id) << "  " << location(model, row.id) << '\n';
    }
    if (shown < rows.size())
        out << "(" << rows.size() - shown << " more)\n";
}

} // namespace pyust::analysis
