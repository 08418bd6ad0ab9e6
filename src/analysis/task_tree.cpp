// The async-aware tree of a thread (task_tree() in report_common.hpp): the tree, folded, svg
// (with ReportOptions::tasks) and tasks formats show a task's frames where its creator's
// await chain is, not under the event loop's Handle._run, where each step of it began.
#include <unordered_map>
#include <vector>

#include "analysis/report_common.hpp"

namespace pyust::analysis {

namespace {

constexpr std::uint32_t unmapped = UINT32_MAX;

// A tree being built, whose nodes merge by frame under a parent.
class TreeBuilder {
public:
    TreeBuilder() : m_nodes(1) {}

    // The child of parent that runs id, made when it has none. Throws std::bad_alloc.
    std::uint32_t child(std::uint32_t parent, FrameId id)
    {
        const auto [it, is_new] =
            m_index.try_emplace(Key{parent, id}, static_cast<std::uint32_t>(m_nodes.size()));
        if (is_new) {
            ContextNode& node = m_nodes.emplace_back();
            node.id = id;
            node.parent = parent;
            m_nodes[parent].children.push_back(it->second);
        }
        return it->second;
    }

    // Adds the calls and times of a node to the one at index.
    void add(std::uint32_t index, const ContextNode& from) noexcept
    {
        m_nodes[index].calls += from.calls;
        m_nodes[index].self_ns += from.self_ns;
    }

    // The tree, each total its self time plus its children's (a child comes after its
    // parent). noexcept.
    std::vector<ContextNode> finish() noexcept
    {
        for (ContextNode& node : m_nodes)
            node.total_ns = node.self_ns;
        for (std::size_t index = m_nodes.size() - 1; index > 0; --index)
            m_nodes[m_nodes[index].parent].total_ns += m_nodes[index].total_ns;
        return std::move(m_nodes);
    }

private:
    struct Key {
        std::uint32_t parent;
        FrameId id;
        bool operator==(const Key& other) const noexcept
        {
            return parent == other.parent && id == other.id;
        }
    };
    struct KeyHash {
        std::size_t operator()(const Key& key) const noexcept
        {
            return FrameIdHash()(key.id) * 31 + key.parent;
        }
    };

    std::vector<ContextNode> m_nodes;
    std::unordered_map<Key, std::uint32_t, KeyHash> m_index;
};

// Copies the subtree below node top of from (not top) under node at of the builder; map gets
// each copied node's place (indexed as from). Throws std::bad_alloc.
void graft(const std::vector<ContextNode>& from, std::uint32_t top, std::uint32_t at,
           bool skips_task_roots, TreeBuilder& tree, std::vector<std::uint32_t>& map)
{
    map[top] = at;
    std::vector<std::uint32_t> todo(from[top].children.rbegin(), from[top].children.rend());
    while (!todo.empty()) {
        const std::uint32_t index = todo.back();
        todo.pop_back();
        const ContextNode& node = from[index];
        if (skips_task_roots && node.is_task_root)
            continue; // the task's, shown where it was created
        map[index] = tree.child(map[node.parent], node.id);
        tree.add(map[index], node);
        todo.insert(todo.end(), node.children.rbegin(), node.children.rend());
    }
}

} // namespace

std::vector<ContextNode> task_tree(const StackModel& model, const Thread& thread, bool with_tasks)
{
    TreeBuilder tree;
    std::vector<std::uint32_t> thread_map(thread.nodes().size(), unmapped);
    graft(thread.nodes(), 0, 0, true, tree, thread_map);
    if (!with_tasks)
        return tree.finish();
    // Tasks in the order they were created: a creator's frames are in place before the tasks
    // it created.
    const auto& task_nodes = model.task_nodes();
    std::vector<std::uint32_t> task_map(task_nodes.size(), unmapped);
    for (const Task& task : model.tasks()) {
        if (!(task.thread == thread.key()))
            continue;
        const auto& map = task.is_created_in_task ? task_map : thread_map;
        std::uint32_t at = task.created_at < map.size() ? map[task.created_at] : unmapped;
        if (at == unmapped)
            at = 0; // created where this thread's tree does not show (another thread's task)
        graft(task_nodes, task.root, at, false, tree, task_map);
    }
    return tree.finish();
}

const std::vector<ContextNode>& shown_nodes(const StackModel& model, const Thread& thread,
                                            const ReportOptions& options,
                                            std::vector<ContextNode>& owned)
{
    if (!options.tasks)
        return thread.nodes();
    owned = task_tree(model, thread, true);
    return owned;
}

} // namespace pyust::analysis
