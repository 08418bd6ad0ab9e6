// The tree format: an indented call tree per thread, calls aggregated per call path, with
// inclusive and self times; short paths and paths past the depth limit are counted, not shown.
#include <string>
#include <utility>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

Cuts write_tree(const StackModel& model, std::ostream& stream, Timestamp min_duration,
                const ReportOptions& options)
{
    Budget out(stream, options.max_bytes);
    std::uint64_t hidden = 0;
    std::uint64_t hidden_by_share = 0;
    std::uint64_t deep = 0; // call paths cut by options.max_depth
    const std::size_t max_depth = options.max_depth;
    for (const Thread* thread : model.threads()) {
        if (thread->event_count() == 0)
            continue; // only named by a python:thread event
        const auto& nodes = thread->nodes();
        Timestamp total = 0;
        for (const std::uint32_t child : nodes[0].children)
            total += nodes[child].total_ns;
        out.line(thread_title(*thread, options) + ": " + std::to_string(thread->event_count()) +
                 " events, " + format_duration(total) + " in frames\n");
        const auto share_limit =
            static_cast<Timestamp>(options.min_share * static_cast<double>(total));
        const auto is_shown = [&](const ContextNode& node) {
            return node.calls != 0 && node.total_ns >= min_duration && node.total_ns >= share_limit;
        };
        // Depth-first, children in the order they were first called. The indentation grows
        // with the depth: a recursion 20,000 deep would take 400 MB of spaces, hence the limit.
        std::vector<std::pair<std::uint32_t, std::size_t>> todo;
        for (auto it = nodes[0].children.rbegin(); it != nodes[0].children.rend(); ++it)
            todo.emplace_back(*it, 1);
        while (!todo.empty()) {
            const auto [index, level] = todo.back();
            todo.pop_back();
            const ContextNode& node = nodes[index];
            if (node.calls == 0)
                continue;
            if (node.total_ns < min_duration) {
                ++hidden;
                continue;
            }
            if (node.total_ns < share_limit) {
                ++hidden_by_share;
                continue;
            }
            if (out.is_full())
                out.skip();
            else
                out.line(std::string(2 * level, ' ') + format_duration(node.total_ns) + "  " +
                         model.label(node.id) + "  (" + std::to_string(node.calls) +
                         (node.calls == 1 ? " call" : " calls") + ", self " +
                         format_duration(node.self_ns) + ")\n");
            if (max_depth && level == max_depth) {
                // What it calls, as one line: the time and the number of call paths below.
                Timestamp below = 0;
                std::uint64_t paths = 0;
                for (const std::uint32_t child : node.children) {
                    if (!is_shown(nodes[child])) {
                        hidden += nodes[child].calls != 0 && nodes[child].total_ns < min_duration;
                        hidden_by_share +=
                            nodes[child].calls != 0 && nodes[child].total_ns >= min_duration;
                        continue;
                    }
                    below += nodes[child].total_ns;
                    paths += 1 + paths_below(nodes, child);
                }
                if (paths) {
                    deep += paths;
                    out.line(std::string(2 * (level + 1), ' ') + format_duration(below) + "  " +
                             cut_label(paths) + '\n');
                }
                continue;
            }
            for (auto it = node.children.rbegin(); it != node.children.rend(); ++it)
                todo.emplace_back(*it, level + 1);
        }
    }
    if (hidden)
        out.put(std::to_string(hidden) + (hidden == 1 ? " call path" : " call paths") +
                " shorter than " + format_duration(min_duration) + " not shown\n");
    if (hidden_by_share)
        out.put(thousands(hidden_by_share) + (hidden_by_share == 1 ? " call path" : " call paths") +
                " under " + printf_string("%g%%", options.min_share * 100) +
                " of their thread's time not shown, with what they call: --min-share 0 shows "
                "them all\n");
    if (deep)
        out.put(thousands(deep) + (deep == 1 ? " call path" : " call paths") + " deeper than " +
                thousands(max_depth) +
                " frames cut, each group in one line [... N frames cut]: --max-depth 0 shows "
                "them all\n");
    out.put_cut_line();
    return out.cuts(deep);
}

} // namespace pyust::analysis
