// The folded format: "frame;frame;frame self_ns" lines, the threads' trees merged, for
// flamegraph.pl, speedscope and the like.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

Cuts write_folded(const StackModel& model, std::ostream& stream, Timestamp min_duration,
                  const ReportOptions& options)
{
    // The threads' trees are merged into one tree of labels (a node per distinct path, its
    // children by label), then written depth first with one growing path: memory grows with the
    // number of distinct paths, never with their total length (a recursion 100,000 deep has
    // 100,000 paths, whose texts would add up to gigabytes; options.max_depth bounds the output
    // the same way).
    struct Merged {
        Timestamp value = 0;
        std::map<std::string_view, std::uint32_t> children;
    };
    std::vector<Merged> merged(1);
    std::set<std::string, std::less<>> labels;
    const auto child_of = [&](std::uint32_t parent, const std::string& text) {
        const std::string_view label = *labels.insert(text).first;
        auto [at, is_new] =
            merged[parent].children.try_emplace(label, static_cast<std::uint32_t>(merged.size()));
        const std::uint32_t target = at->second;
        if (is_new)
            merged.emplace_back();
        return target;
    };
    std::uint64_t deep = 0; // call paths cut by options.max_depth
    // Several processes: each one's stacks start with its title (a frame of no time).
    const bool is_per_process = !options.merge_processes && traced_pids(model).size() > 1;
    std::vector<ContextNode> owned;
    for (const Thread* thread : model.threads()) {
        const auto& nodes = shown_nodes(model, *thread, options, owned);
        std::uint32_t top = 0;
        if (is_per_process)
            top = child_of(0, printable(process_title(options, thread->key().pid)));
        struct Todo {
            std::uint32_t node;
            std::uint32_t parent; // in merged
            std::size_t depth;    // in frames, the process's title not counted
        };
        std::vector<Todo> todo;
        for (const std::uint32_t child : nodes[0].children)
            todo.push_back(Todo{child, top, 1});
        while (!todo.empty()) {
            const auto [index, parent, depth] = todo.back();
            todo.pop_back();
            const ContextNode& node = nodes[index];
            if (node.is_empty() || node.total_ns < min_duration)
                continue;
            const std::uint32_t target = child_of(parent, model.label(node.id));
            const bool is_deepest = options.max_depth && depth == options.max_depth;
            Timestamp value = node.self_ns;
            Timestamp below = 0;     // is_deepest: the time of what it calls
            std::uint64_t paths = 0; // and its call paths
            for (const std::uint32_t child : node.children) {
                if (!nodes[child].is_empty() && nodes[child].total_ns < min_duration) {
                    value += nodes[child].total_ns;
                } else if (!is_deepest) {
                    todo.push_back(Todo{child, target, depth + 1});
                } else if (!nodes[child].is_empty()) {
                    below += nodes[child].total_ns;
                    paths += 1 + paths_below(nodes, child);
                }
            }
            merged[target].value += value;
            if (paths) {
                // One frame holds the time of the call paths cut, so that the sums stay the
                // traced time.
                merged[child_of(target, cut_label(paths))].value += below;
                deep += paths;
            }
        }
    }
    // Depth first, each node's line before its children's, siblings in label order.
    struct Pending {
        std::uint32_t node;
        std::string_view label;
        std::size_t parent_length; // of the path
        bool is_top;
    };
    Budget out(stream, options.max_bytes, "stacks");
    std::string path;
    std::vector<Pending> todo;
    const auto push_children = [&](std::uint32_t index) {
        const auto& children = merged[index].children;
        for (auto child = children.rbegin(); child != children.rend(); ++child)
            todo.push_back(Pending{child->second, child->first, path.size(), index == 0});
    };
    push_children(0);
    while (!todo.empty()) {
        const Pending next = todo.back();
        todo.pop_back();
        if (out.is_full()) {
            // Only counted: the paths are not worth building any more.
            out.skip(merged[next.node].value > 0);
            for (const auto& [label, child] : merged[next.node].children)
                todo.push_back(Pending{child, label, 0, false});
            continue;
        }
        path.resize(next.parent_length);
        if (!next.is_top)
            path += ';';
        path += next.label;
        if (merged[next.node].value > 0)
            out.line(path + ' ' + std::to_string(merged[next.node].value) + '\n');
        push_children(next.node);
    }
    return out.cuts(deep);
}

} // namespace pyust::analysis
