// The profile format: a cProfile-like table per process (or one merged) of every function's
// calls, self and inclusive time, read from the threads' calling context trees.
#include <algorithm>
#include <cinttypes>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

namespace {

// Adds one thread's per-function statistics, read from its calling context tree, to table:
// calls and self time of every node of the function, inclusive time of the outermost ones
// (a recursive call's time is already in its caller's), as the model counts them.
void add_functions(const Thread& thread, FunctionTable& table)
{
    const auto& nodes = thread.nodes();
    std::unordered_map<FrameId, std::uint32_t, FrameIdHash> open; // on the current path
    std::vector<std::pair<std::uint32_t, bool>> todo;             // (node, is the way back)
    for (const std::uint32_t child : nodes[0].children)
        todo.emplace_back(child, false);
    while (!todo.empty()) {
        const auto [index, is_back] = todo.back();
        todo.pop_back();
        const ContextNode& node = nodes[index];
        if (is_back) {
            if (--open[node.id] == 0)
                open.erase(node.id);
            continue;
        }
        FunctionStats& stats = table[node.id];
        stats.calls += node.calls;
        stats.self_ns += node.self_ns;
        std::uint32_t& depth = open[node.id];
        if (depth++ == 0)
            stats.total_ns += node.total_ns;
        todo.emplace_back(index, true);
        for (const std::uint32_t child : node.children)
            todo.emplace_back(child, false);
    }
}

double mean_ns(const FunctionStats& stats)
{
    return stats.calls ? static_cast<double>(stats.total_ns) / static_cast<double>(stats.calls)
                       : 0.0;
}

struct ProfileRow {
    std::string label;
    std::string place;
    FunctionStats stats;
};

// The sort key of a row under options.sort, largest first.
double sort_value(const FunctionStats& stats, SortKey key)
{
    switch (key) {
    case SortKey::self:
        return static_cast<double>(stats.self_ns);
    case SortKey::total:
        return static_cast<double>(stats.total_ns);
    case SortKey::calls:
        return static_cast<double>(stats.calls);
    case SortKey::mean:
        return mean_ns(stats);
    }
    return 0.0;
}

// One profile table: its header line (after prefix), the column names, the rows in
// options.sort order up to options.limit, and a line for the rows left out.
void write_function_table(std::vector<ProfileRow> rows, std::size_t threads,
                          const std::string& prefix, const ReportOptions& options, Budget& out)
{
    std::sort(rows.begin(), rows.end(), [&](const ProfileRow& a, const ProfileRow& b) {
        const double ka = sort_value(a.stats, options.sort);
        const double kb = sort_value(b.stats, options.sort);
        if (ka != kb)
            return ka > kb;
        return std::make_tuple(-a.stats.self_ns, -a.stats.total_ns, a.label, a.place) <
               std::make_tuple(-b.stats.self_ns, -b.stats.total_ns, b.label, b.place);
    });
    std::uint64_t calls = 0;
    Timestamp self = 0;
    for (const ProfileRow& row : rows) {
        calls += row.stats.calls;
        self += row.stats.self_ns;
    }
    out.line(prefix + std::to_string(calls) + " calls of " + std::to_string(rows.size()) +
             " functions in " + std::to_string(threads) +
             (threads == 1 ? " thread, " : " threads, ") + format_duration(self) +
             " of self time\n\n");
    out.line(printf_string("%9s %12s %12s %12s  %s\n", "ncalls", "self_ms", "total_ms", "mean_us",
                           "function (file:line)"));
    const std::size_t shown = options.limit ? std::min(options.limit, rows.size()) : rows.size();
    for (std::size_t i = 0; i < shown; ++i) {
        const ProfileRow& row = rows[i];
        if (out.is_full()) {
            out.skip(shown - i);
            break;
        }
        out.line(printf_string("%9" PRIu64 " %12s %12s %12.3f  ", row.stats.calls,
                               format_ms(row.stats.self_ns).c_str(),
                               format_ms(row.stats.total_ns).c_str(), mean_ns(row.stats) / 1e3) +
                 row.label + "  " + row.place + '\n');
    }
    if (shown < rows.size()) {
        Timestamp hidden_self = 0;
        std::uint64_t hidden_calls = 0;
        for (std::size_t i = shown; i < rows.size(); ++i) {
            hidden_self += rows[i].stats.self_ns;
            hidden_calls += rows[i].stats.calls;
        }
        out.line("... " + thousands(rows.size() - shown) + " more functions not shown (" +
                 printf_string("%.1f%%", self ? 100.0 * static_cast<double>(hidden_self) /
                                                    static_cast<double>(self)
                                              : 0.0) +
                 " of the self time, " + thousands(hidden_calls) +
                 " calls): --limit 0 shows them all\n");
    }
}

} // namespace

Cuts write_profile(const StackModel& model, std::ostream& stream, const ReportOptions& options)
{
    Budget out(stream, options.max_bytes);
    const std::vector<std::int64_t> pids = traced_pids(model);
    const auto threads_of = [&](const std::int64_t* pid) {
        std::size_t count = 0;
        for (const Thread* thread : model.threads())
            count += !pid || thread->key().pid == *pid;
        return count;
    };
    if (pids.size() > 1 && !options.merge_processes) {
        for (std::size_t i = 0; i < pids.size(); ++i) {
            FunctionTable table;
            for (const Thread* thread : model.threads())
                if (thread->key().pid == pids[i])
                    add_functions(*thread, table);
            std::vector<ProfileRow> rows;
            for (const auto& [id, stats] : table)
                rows.push_back(ProfileRow{model.label(id), location(model, id), stats});
            if (rows.empty())
                continue; // its every frame was hidden (--modules)
            if (i)
                out.line("\n");
            write_function_table(std::move(rows), threads_of(&pids[i]),
                                 process_title(options, pids[i]) + ": ", options, out);
        }
        out.put_cut_line();
        return out.cuts();
    }
    std::vector<ProfileRow> rows;
    if (pids.size() > 1) {
        // Merged: one row per function name and place, whichever process registered it.
        std::map<std::pair<std::string, std::string>, FunctionStats> merged;
        for (const auto& [id, stats] : model.functions()) {
            FunctionStats& row = merged[{model.label(id), location(model, id)}];
            row.calls += stats.calls;
            row.self_ns += stats.self_ns;
            row.total_ns += stats.total_ns;
        }
        for (auto& [key, stats] : merged)
            rows.push_back(ProfileRow{key.first, key.second, stats});
        std::string header = std::to_string(pids.size()) + " processes merged:";
        for (std::size_t i = 0; i < pids.size(); ++i)
            header += (i ? ", " : " ") + process_title(options, pids[i]);
        out.line(header + '\n');
    } else {
        for (const auto& [id, stats] : model.functions())
            rows.push_back(ProfileRow{model.label(id), location(model, id), stats});
    }
    write_function_table(std::move(rows), threads_of(nullptr),
                         pids.size() == 1 ? process_title(options, pids[0]) + ": " : "", options,
                         out);
    out.put_cut_line();
    return out.cuts();
}

} // namespace pyust::analysis
