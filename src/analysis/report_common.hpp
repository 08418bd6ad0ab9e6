// What the report writers (reports.cpp and report_*.cpp) share and reports.hpp does not
// publish: number formats, the output budget of ReportOptions::max_bytes, the label of a depth
// cut, the order of the traced processes. Internal to src/analysis: only the writers include it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/reports.hpp"

namespace pyust::analysis {

// printf into a string of at most 255 bytes. Throws std::bad_alloc.
std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Milliseconds with three decimals: "1.500". Throws std::bad_alloc.
std::string format_ms(Timestamp ns);

// Where a frame's code is: the model's rule (StackModel::location). Throws std::bad_alloc.
inline std::string location(const StackModel& model, FrameId id)
{
    return model.location(id);
}

// "19,000". Throws std::bad_alloc.
std::string thousands(std::uint64_t n);

// "1.5 MB". Throws std::bad_alloc.
std::string megabytes(std::uint64_t bytes);

// A report's text written to out within ReportOptions::max_bytes (0: no limit): a line that
// would pass the bound is left out and counted, and so is every line after it. The few lines
// of notes a report ends with are written whatever the bound.
class Budget {
public:
    // unit names the lines in notes: "lines", "stacks", "boxes".
    Budget(std::ostream& out, std::uint64_t max_bytes, const char* unit = "lines") noexcept
        : m_out(out), m_max(max_bytes), m_unit(unit)
    {
    }

    // Whether the bound was reached: later lines need not be composed, only counted (skip()).
    bool is_full() const noexcept { return m_is_full; }

    // Writes text unless it would pass the bound; false when it was left out. Throws what out
    // throws.
    bool line(std::string_view text)
    {
        if (!m_is_full && m_max && m_bytes + text.size() > m_max)
            m_is_full = true;
        if (m_is_full) {
            ++m_left_out;
            return false;
        }
        put(text);
        return true;
    }

    // Counts lines left out without their text. Precondition: is_full().
    void skip(std::uint64_t lines = 1) noexcept { m_left_out += lines; }

    // Writes text whatever the bound. Throws what out throws.
    void put(std::string_view text)
    {
        m_out << text;
        m_bytes += text.size();
    }

    // The last line of a text report whose bound left lines out. Throws what out throws,
    // std::bad_alloc.
    void put_cut_line()
    {
        if (m_left_out)
            put("... the output reached " + megabytes(m_max) + ": " + thousands(m_left_out) +
                " more " + m_unit + " not shown: --max-size 0 shows them all\n");
    }

    Cuts cuts(std::uint64_t deep_paths = 0) const noexcept
    {
        return Cuts{deep_paths, m_left_out, m_bytes, m_unit};
    }

private:
    std::ostream& m_out;
    std::uint64_t m_max;
    const char* m_unit;
    std::uint64_t m_bytes = 0;
    std::uint64_t m_left_out = 0;
    bool m_is_full = false;
};

// The call paths with calls below a node of a thread's tree (the node itself not counted).
// Throws std::bad_alloc.
std::uint64_t paths_below(const std::vector<ContextNode>& nodes, std::uint32_t index);

// The label of what a depth limit cut: "[... 19,000 frames cut]". Throws std::bad_alloc.
std::string cut_label(std::uint64_t frames);

// What a call tree leaves out: nodes shorter than min_duration or than share_limit (ns), and
// call paths deeper than max_depth frames (0: none).
struct TreeLimits {
    Timestamp min_duration = 0;
    Timestamp share_limit = 0;
    std::size_t max_depth = 0;
};

// What write_tree_nodes() left out, for write_tree_notes().
struct TreeCounts {
    std::uint64_t hidden = 0;          // shorter than min_duration
    std::uint64_t hidden_by_share = 0; // under share_limit
    std::uint64_t deep = 0;            // call paths cut by max_depth
};

// Writes, as the tree format does, the call tree below node top of nodes (top itself not
// written), each node's line indented by two spaces per level from first_level on, within
// limits (levels counted from first_level); adds what it left out to counts. Throws what out
// throws, std::bad_alloc.
void write_tree_nodes(const StackModel& model, const std::vector<ContextNode>& nodes,
                      std::uint32_t top, std::size_t first_level, const TreeLimits& limits,
                      Budget& out, TreeCounts& counts);

// The lines that say what write_tree_nodes() left out, written whatever the budget; whole
// says what options.min_share is a share of. Throws like write_tree_nodes.
void write_tree_notes(Budget& out, const TreeCounts& counts, Timestamp min_duration,
                      const ReportOptions& options, const char* whole = "their thread's time");

// The inclusive time of the children of node top. noexcept.
Timestamp tree_total(const std::vector<ContextNode>& nodes, std::uint32_t top);

// A thread's tree for the async-aware reports (task_tree.cpp): its nodes without the frames
// of asyncio tasks (the subtrees of its is_task_root nodes), and, with_tasks, each task's
// frames (StackModel::task_nodes()) under the node where it was created, merged by frame:
// a task created in a step of another task under that task's frames, one created outside any
// under the thread's. Node 0 is the root; each node's total is its self time plus its
// children's totals. Precondition: model.finish() was called. Throws std::bad_alloc.
std::vector<ContextNode> task_tree(const StackModel& model, const Thread& thread, bool with_tasks);

// The nodes the tree, folded and svg formats show of a thread: thread.nodes(), or with
// options.tasks its task_tree(), built into owned. Throws std::bad_alloc.
const std::vector<ContextNode>& shown_nodes(const StackModel& model, const Thread& thread,
                                            const ReportOptions& options,
                                            std::vector<ContextNode>& owned);

// The pids of the threads that had events, in the order of the processes' first events: a
// parent before the children it forked, even where the children's pids wrapped around at the
// kernel's pid_max and are the smaller. Throws std::bad_alloc.
std::vector<std::int64_t> traced_pids(const StackModel& model);

// "pid 1234 (python3 prog.py): start not recorded (...): its first 1.204 s, from A to B".
// Throws std::bad_alloc.
std::string lost_start_note(const ReportOptions& options, std::int64_t pid, const Gap& gap);

} // namespace pyust::analysis
