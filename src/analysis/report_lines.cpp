// The lines format: per file:line, its hits and the time until the frame's next line (or its
// end), from the python:line events.
#include <algorithm>
#include <cinttypes>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

Cuts write_lines(const StackModel& model, std::ostream& stream, const ReportOptions& options)
{
    Budget out(stream, options.max_bytes);
    std::map<std::tuple<std::string, std::uint32_t, std::string>, LineStats> merged;
    for (const auto& [key, stats] : model.lines()) {
        const CodeNames* info = model.code(key.code_id);
        LineStats& row =
            merged[std::make_tuple(info && info->is_registered ? info->file : std::string("?"),
                                   key.line, model.label(FrameId{key.code_id, false}))];
        row.hits += stats.hits;
        row.total_ns += stats.total_ns;
    }
    if (merged.empty()) {
        out.line("No python:line events (trace with `pyust run --lines`).\n");
        return out.cuts();
    }
    const std::vector<std::int64_t> pids = traced_pids(model);
    if (pids.size() > 1) {
        std::string header = "Lines of " + std::to_string(pids.size()) + " processes, merged:";
        for (std::size_t i = 0; i < pids.size(); ++i)
            header += (i ? ", " : " ") + process_title(options, pids[i]);
        out.line(header + "\n\n");
    } else if (pids.size() == 1) {
        out.line(process_title(options, pids[0]) + ":\n\n");
    }
    using Row = std::pair<const std::tuple<std::string, std::uint32_t, std::string>*, LineStats>;
    std::vector<Row> rows;
    Timestamp total = 0;
    for (const auto& [key, stats] : merged) {
        rows.emplace_back(&key, stats);
        total += stats.total_ns;
    }
    const auto value = [&](const LineStats& stats) {
        switch (options.sort) {
        case SortKey::calls:
            return static_cast<double>(stats.hits);
        case SortKey::mean:
            return stats.hits
                       ? static_cast<double>(stats.total_ns) / static_cast<double>(stats.hits)
                       : 0.0;
        case SortKey::self:
        case SortKey::total:
            break;
        }
        return static_cast<double>(stats.total_ns);
    };
    // The slowest first; ties in file and line order.
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const Row& a, const Row& b) { return value(a.second) > value(b.second); });
    out.line(printf_string("%9s %12s %12s  %s\n", "hits", "total_ms", "mean_us",
                           "file:line (function)"));
    const std::size_t shown = options.limit ? std::min(options.limit, rows.size()) : rows.size();
    for (std::size_t i = 0; i < shown; ++i) {
        if (out.is_full()) {
            out.skip(shown - i);
            break;
        }
        const auto& [key, stats] = rows[i];
        const double mean_us =
            stats.hits ? static_cast<double>(stats.total_ns) / 1e3 / static_cast<double>(stats.hits)
                       : 0.0;
        out.line(printf_string("%9" PRIu64 " %12s %12.3f  ", stats.hits,
                               format_ms(stats.total_ns).c_str(), mean_us) +
                 std::get<0>(*key) + ':' + std::to_string(std::get<1>(*key)) + "  (" +
                 std::get<2>(*key) + ")\n");
    }
    if (shown < rows.size()) {
        Timestamp hidden = 0;
        for (std::size_t i = shown; i < rows.size(); ++i)
            hidden += rows[i].second.total_ns;
        out.line("... " + thousands(rows.size() - shown) + " more lines not shown (" +
                 printf_string("%.1f%%", total ? 100.0 * static_cast<double>(hidden) /
                                                     static_cast<double>(total)
                                               : 0.0) +
                 " of the lines' time): --limit 0 shows them all\n");
    }
    out.put_cut_line();
    return out.cuts();
}

} // namespace pyust::analysis
