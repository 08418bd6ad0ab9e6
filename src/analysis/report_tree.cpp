// The tree format: an indented call tree per thread, calls aggregated per call path, with
// inclusive and self times; short paths and paths past the depth limit are counted, not shown.
#include <string>
#include <utility>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

void write_tree_nodes(const StackModel& model, const std::vector<ContextNode>& nodes,
                      std::uint32_t top, std::size_t first_level, const TreeLimits& limits,
                      Budget& out, TreeCounts& counts)
{
    const auto is_shown = [&](const ContextNode& node) {
        return !node.is_empty() && node.total_ns >= limits.min_duration &&
               node.total_ns >= limits.share_limit;
    };
    // Depth-first, children in the order they were first called. The indentation grows
    // with the depth: a recursion 20,000 deep would take 400 MB of spaces, hence the limit.
    std::vector<std::pair<std::uint32_t, std::size_t>> todo;
    for (auto it = nodes[top].children.rbegin(); it != nodes[top].children.rend(); ++it)
        todo.emplace_back(*it, first_level);
    while (!todo.empty()) {
        const auto [index, level] = todo.back();
        todo.pop_back();
        const ContextNode& node = nodes[index];
        if (node.is_empty())
            continue;
        if (node.total_ns < limits.min_duration) {
            ++counts.hidden;
            continue;
        }
        if (node.total_ns < limits.share_limit) {
            ++counts.hidden_by_share;
            continue;
        }
        if (out.is_full())
            out.skip();
        else
            out.line(std::string(2 * level, ' ') + format_duration(node.total_ns) + "  " +
                     model.label(node.id) + "  (" +
                     (node.calls == 0   ? std::string("resumed")
                      : node.calls == 1 ? std::string("1 call")
                                        : std::to_string(node.calls) + " calls") +
                     ", self " + format_duration(node.self_ns) + ")\n");
        if (limits.max_depth && level + 1 - first_level == limits.max_depth) {
            // What it calls, as one line: the time and the number of call paths below.
            Timestamp below = 0;
            std::uint64_t paths = 0;
            for (const std::uint32_t child : node.children) {
                if (!is_shown(nodes[child])) {
                    const bool is_short = nodes[child].total_ns < limits.min_duration;
                    counts.hidden += !nodes[child].is_empty() && is_short;
                    counts.hidden_by_share += !nodes[child].is_empty() && !is_short;
                    continue;
                }
                below += nodes[child].total_ns;
                paths += 1 + paths_below(nodes, child);
            }
            if (paths) {
                counts.deep += paths;
                out.line(std::string(2 * (level + 1), ' ') + format_duration(below) + "  " +
                         cut_label(paths) + '\n');
            }
            continue;
        }
        for (auto it = node.children.rbegin(); it != node.children.rend(); ++it)
            todo.emplace_back(*it, level + 1);
    }
}

void write_tree_notes(Budget& out, const TreeCounts& counts, Timestamp min_duration,
                      const ReportOptions& options, const char* whole)
{
    if (counts.hidden)
        out.put(std::to_string(counts.hidden) +
                (counts.hidden == 1 ? " call path" : " call paths") + " shorter than " +
                format_duration(min_duration) + " not shown\n");
    if (counts.hidden_by_share)
        out.put(thousands(counts.hidden_by_share) +
                (counts.hidden_by_share == 1 ? " call path" : " call paths") + " under " +
                printf_string("%g%%", options.min_share * 100) + " of " + whole +
                " not shown, with what they call: --min-share 0 shows them all\n");
    if (counts.deep)
        out.put(thousands(counts.deep) + (counts.deep == 1 ? " call path" : " call paths") +
                " deeper than " + thousands(options.max_depth) +
                " frames cut, each group in one line [... N frames cut]: --max-depth 0 shows "
                "them all\n");
}

Timestamp tree_total(const std::vector<ContextNode>& nodes, std::uint32_t top)
{
    Timestamp total = 0;
    for (const std::uint32_t child : nodes[top].children)
        total += nodes[child].total_ns;
    return total;
}

Cuts write_tree(const StackModel& model, std::ostream& stream, Timestamp min_duration,
                const ReportOptions& options)
{
    Budget out(stream, options.max_bytes);
    TreeCounts counts;
    std::vector<ContextNode> owned;
    for (const Thread* thread : model.threads()) {
        if (thread->event_count() == 0)
            continue; // only named by a python:thread event
        const auto& nodes = shown_nodes(model, *thread, options, owned);
        const Timestamp total = tree_total(nodes, 0);
        out.line(thread_title(*thread, options) + ": " + std::to_string(thread->event_count()) +
                 " events, " + format_duration(total) + " in frames\n");
        const TreeLimits limits{
            min_duration, static_cast<Timestamp>(options.min_share * static_cast<double>(total)),
            options.max_depth};
        write_tree_nodes(model, nodes, 0, 1, limits, out, counts);
    }
    write_tree_notes(out, counts, min_duration, options);
    out.put_cut_line();
    return out.cuts(counts.deep);
}

} // namespace pyust::analysis
