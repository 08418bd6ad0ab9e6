// The report writers (see reports.hpp).
#include "reports.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

namespace pyust::analysis {

namespace {

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));

std::string printf_string(const char* format, ...)
{
    char text[256];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return text;
}

std::string format_ms(Timestamp ns)
{
    return printf_string("%.3f", static_cast<double>(ns) / 1e6);
}

// Where a frame's code is: the model's rule (StackModel::location).
std::string location(const StackModel& model, FrameId id)
{
    return model.location(id);
}

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

std::string xml_text(const std::string& text)
{
    std::string out;
    for (const char c : text) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

// The most bytes of a command line in a process's title.
constexpr std::size_t max_title_command = 160;

// A command line (python:process) as a title: its program by its base name
// ("/usr/bin/python3 app.py" reads "python3 app.py"), cut at max_title_command bytes,
// readable() (its ';' kept, a line feed written \n).
std::string command_title(std::string_view command)
{
    if (!command.empty() && command[0] != '\'') {
        const std::string_view program = command.substr(0, command.find(' '));
        const std::size_t slash = program.rfind('/');
        if (slash != std::string_view::npos && slash + 1 < program.size())
            command.remove_prefix(slash + 1);
    }
    if (command.size() <= max_title_command)
        return readable(command);
    std::size_t end = max_title_command;
    while (end > 0 && (static_cast<unsigned char>(command[end]) & 0xc0) == 0x80)
        --end; // not inside a character
    return readable(command.substr(0, end)) + "...";
}

} // namespace

std::string format_duration(Timestamp ns)
{
    if (ns < 1000)
        return std::to_string(ns) + " ns";
    if (ns < 1000000)
        return printf_string("%.3f us", static_cast<double>(ns) / 1e3);
    if (ns < 1000000000)
        return printf_string("%.3f ms", static_cast<double>(ns) / 1e6);
    return printf_string("%.3f s", static_cast<double>(ns) / 1e9);
}

std::string format_time(Timestamp ns)
{
    const char* sign = ns < 0 ? "-" : "";
    const std::uint64_t magnitude =
        ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    return printf_string("%s%" PRIu64 ".%09" PRIu64, sign, magnitude / 1000000000,
                         magnitude % 1000000000);
}

std::string process_title(const ReportOptions& options, std::int64_t pid)
{
    std::string title = "pid " + std::to_string(pid);
    const auto it = options.processes.find(pid);
    if (it != options.processes.end() && !it->second.empty())
        title += " (" + it->second + ")";
    return title;
}

namespace {

// "pid 1234 (python3 prog.py): start not recorded (...): its first 1.204 s, from A to B".
std::string lost_start_note(const ReportOptions& options, std::int64_t pid, const Gap& gap)
{
    return process_title(options, pid) + ": " + gap_kind_name(gap.kind) + ": its first " +
           format_duration(gap.end - gap.begin) + ", from " + format_time(gap.begin) + " to " +
           format_time(gap.end);
}

} // namespace

std::string thread_title(const Thread& thread, const ReportOptions& options)
{
    std::string title =
        process_title(options, thread.key().pid) + " tid " + std::to_string(thread.key().tid);
    if (!thread.name().empty())
        title += " (" + thread.name() + ")";
    return title;
}

void name_processes(const StackModel& model, const std::map<std::int64_t, std::string>& commands,
                    const std::map<std::int64_t, std::string>& procnames,
                    std::map<std::int64_t, std::string> scripts, ReportOptions& options)
{
    // A process that registered no __main__ code (a forked child runs its parent's) is named
    // by the file of the shallowest __main__ code it ran, breadth first over its threads'
    // trees.
    for (const Thread* thread : model.threads()) {
        if (scripts.count(thread->key().pid))
            continue;
        const auto& nodes = thread->nodes();
        std::vector<std::uint32_t> level(nodes[0].children.begin(), nodes[0].children.end());
        while (!level.empty() && !scripts.count(thread->key().pid)) {
            std::vector<std::uint32_t> next;
            for (const std::uint32_t index : level) {
                const ContextNode& node = nodes[index];
                const CodeNames* info = node.id.is_c ? nullptr : model.code(node.id.value);
                if (info && info->module == "__main__" && !info->file.empty() &&
                    info->file[0] != '<') {
                    scripts[thread->key().pid] = info->file;
                    break;
                }
                next.insert(next.end(), node.children.begin(), node.children.end());
            }
            level.swap(next);
        }
    }
    std::set<std::int64_t> pids;
    for (const Thread* thread : model.threads())
        pids.insert(thread->key().pid);
    for (const auto& [pid, name] : procnames)
        pids.insert(pid);
    for (const auto& [pid, command] : commands) {
        if (!command.empty())
            options.processes[pid] = command_title(command);
    }
    for (const std::int64_t pid : pids) {
        if (options.processes.count(pid))
            continue; // named by its command line
        std::string name;
        if (const auto it = procnames.find(pid); it != procnames.end())
            name = readable(it->second);
        if (const auto it = scripts.find(pid); it != scripts.end())
            name += (name.empty() ? "" : " ") + readable(it->second);
        if (!name.empty())
            options.processes[pid] = name;
    }
}

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

std::string thousands(std::uint64_t n)
{
    std::string digits = std::to_string(n);
    for (std::size_t at = digits.size(); at > 3; at -= 3)
        digits.insert(at - 3, ",");
    return digits;
}

std::string megabytes(std::uint64_t bytes)
{
    return printf_string("%g MB", static_cast<double>(bytes) / 1e6);
}

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
std::uint64_t paths_below(const std::vector<ContextNode>& nodes, std::uint32_t index)
{
    std::uint64_t count = 0;
    std::vector<std::uint32_t> todo(nodes[index].children.begin(), nodes[index].children.end());
    while (!todo.empty()) {
        const ContextNode& node = nodes[todo.back()];
        todo.pop_back();
        count += node.calls != 0;
        todo.insert(todo.end(), node.children.begin(), node.children.end());
    }
    return count;
}

// The label of what a depth limit cut: "[... 19,000 frames cut]".
std::string cut_label(std::uint64_t frames)
{
    return "[... " + thousands(frames) + (frames == 1 ? " frame cut]" : " frames cut]");
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

// The pids of the threads that had events, in the order of the processes' first events: a
// parent before the children it forked, even where the children's pids wrapped around at the
// kernel's pid_max and are the smaller.
std::vector<std::int64_t> traced_pids(const StackModel& model)
{
    std::map<std::int64_t, Timestamp> first_ts;
    for (const Thread* thread : model.threads()) {
        if (thread->event_count() == 0)
            continue;
        const auto [it, is_new] = first_ts.emplace(thread->key().pid, thread->first_ts());
        if (!is_new)
            it->second = std::min(it->second, thread->first_ts());
    }
    std::vector<std::pair<Timestamp, std::int64_t>> order;
    for (const auto& [pid, ts] : first_ts)
        order.emplace_back(ts, pid);
    std::sort(order.begin(), order.end());
    std::vector<std::int64_t> pids;
    for (const auto& entry : order)
        pids.push_back(entry.second);
    return pids;
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
    for (const Thread* thread : model.threads()) {
        const auto& nodes = thread->nodes();
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
            if (node.calls == 0 || node.total_ns < min_duration)
                continue;
            const std::uint32_t target = child_of(parent, model.label(node.id));
            const bool is_deepest = options.max_depth && depth == options.max_depth;
            Timestamp value = node.self_ns;
            Timestamp below = 0;     // is_deepest: the time of what it calls
            std::uint64_t paths = 0; // and its call paths
            for (const std::uint32_t child : node.children) {
                if (nodes[child].calls != 0 && nodes[child].total_ns < min_duration) {
                    value += nodes[child].total_ns;
                } else if (!is_deepest) {
                    todo.push_back(Todo{child, target, depth + 1});
                } else if (nodes[child].calls != 0) {
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

Cuts write_gaps(const StackModel& model, std::ostream& stream, const StreamNamer& stream_name,
                const ReportOptions& options)
{
    Budget out(stream, options.max_bytes);
    bool has_header = false;
    const auto header = [&] {
        if (!has_header)
            out.line("\nIncomplete:\n");
        has_header = true;
    };
    const auto line = [&](const std::string& text) {
        header();
        if (out.is_full())
            out.skip();
        else
            out.line("  " + text + '\n');
    };
    const auto gap_line = [&](const std::string& where, const Gap& gap) {
        line(where + ": " + gap_kind_name(gap.kind) +
             (gap.count ? " (" + std::to_string(gap.count) + ')' : std::string()) + ", from " +
             format_time(gap.begin) + " to " + format_time(gap.end));
    };
    for (const auto& [pid, gap] : model.lost_starts())
        line(lost_start_note(options, pid, gap));
    for (const Thread* thread : model.threads())
        for (const Gap& gap : thread->gaps())
            gap_line(thread_title(*thread, options), gap);
    std::map<std::string, std::vector<Gap>> streams;
    for (const auto& [stream_index, gaps] : model.stream_gaps())
        streams[stream_name(stream_index)] = gaps;
    for (const auto& [name, gaps] : streams)
        for (const Gap& gap : gaps)
            gap_line("stream " + name, gap);
    out.put_cut_line();
    return out.cuts();
}

std::string cut_note(const Cuts& cuts, const ReportOptions& options)
{
    std::string note;
    if (cuts.deep_paths)
        note = thousands(cuts.deep_paths) + (cuts.deep_paths == 1 ? " call path" : " call paths") +
               " deeper than " + thousands(options.max_depth) +
               " frames cut, each group as one [... N frames cut] (--max-depth 0 shows them all)";
    if (cuts.lines)
        note += (note.empty() ? "" : "; ") + std::string("the output reached ") +
                megabytes(options.max_bytes) + ": " + thousands(cuts.lines) + " more " + cuts.unit +
                " left out (--max-size 0 writes them all)";
    return note;
}

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
    if (end - begin < m_min_duration)
        return;
    // Past the size limit, only the frames open when it was reached are still written (at
    // most the depth of each stack): the timeline up to that time stays whole.
    if (m_is_cutting && begin >= m_first_cut) {
        ++m_cut;
        return;
    }
    m_event = "{\"name\":";
    m_event += json_string(m_model.label(frame.id));
    m_event += ",\"cat\":\"";
    m_event += frame.id.is_kernel ? "kernel" : frame.id.is_c ? "c" : "python";
    m_event += "\",\"ph\":\"X\",\"ts\":";
    m_event += printf_string("%.3f", static_cast<double>(begin - m_origin) / 1e3);
    m_event += ",\"dur\":";
    m_event += printf_string("%.3f", static_cast<double>(end - begin) / 1e3);
    m_event += ",\"pid\":" + std::to_string(thread.key().pid) +
               ",\"tid\":" + std::to_string(thread.key().tid) + '}';
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

namespace {

// One box of the flame graph.
struct Flame {
    std::string label;
    Timestamp total = 0;
    Timestamp self = 0;
    std::uint64_t calls = 0;
    int depth = 0;
    Timestamp x = 0; // start, in ns from the left edge
    const char* kind = "py";
};

// The label cut to what fits in width pixels (about 6.5 per character), as the script does.
std::string fit_label(const std::string& label, double width)
{
    const double room = (width - 6) / 6.5;
    if (room < 3)
        return std::string();
    const std::size_t n = static_cast<std::size_t>(room);
    if (label.size() <= n)
        return label;
    std::size_t cut = n - 2;
    while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80)
        --cut; // never inside a UTF-8 sequence
    return label.substr(0, cut) + "..";
}

std::string flame_color(const Flame& flame)
{
    std::uint32_t hash = 2166136261u;
    for (const char c : flame.label)
        hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
    if (std::string(flame.kind) == "top")
        return "#c8c8c8";
    if (std::string(flame.kind) == "kernel")
        return printf_string("hsl(%u,45%%,%u%%)", 100 + hash % 40, 55 + (hash >> 8) % 15);
    if (std::string(flame.kind) == "c")
        return printf_string("hsl(%u,55%%,%u%%)", 195 + hash % 40, 60 + (hash >> 8) % 15);
    return printf_string("hsl(%u,80%%,%u%%)", hash % 55, 55 + (hash >> 8) % 15);
}

} // namespace

Cuts write_svg(const StackModel& model, std::ostream& out, Timestamp min_duration,
               const std::string& title, const ReportOptions& options)
{
    const std::vector<const Thread*> threads = model.threads();
    Timestamp grand_total = 0;
    for (const Thread* thread : threads)
        for (const std::uint32_t child : thread->nodes()[0].children)
            grand_total += thread->nodes()[child].total_ns;
    // A box narrower than a tenth of a pixel of the 1200-pixel graph is not worth drawing.
    const Timestamp min_width = std::max<Timestamp>(min_duration, grand_total / 12000);

    std::vector<Flame> flames;
    flames.push_back(Flame{"all", grand_total, 0, 0, 0, 0, "top"});
    Timestamp thread_x = 0;
    int max_depth = 0;
    std::uint64_t deep = 0; // call paths cut by options.max_depth
    // Frames start at depth 2, above "all" and the thread.
    const auto deepest = static_cast<std::size_t>(options.max_depth + 1);
    for (const Thread* thread : threads) {
        const auto& nodes = thread->nodes();
        Timestamp thread_total = 0;
        for (const std::uint32_t child : nodes[0].children)
            thread_total += nodes[child].total_ns;
        if (thread_total <= 0 || thread_total < min_width)
            continue;
        flames.push_back(
            Flame{thread_title(*thread, options), thread_total, 0, 0, 1, thread_x, "top"});
        // (node, depth, x)
        std::vector<std::tuple<std::uint32_t, int, Timestamp>> todo;
        Timestamp x = thread_x;
        for (const std::uint32_t child : nodes[0].children) {
            todo.emplace_back(child, 2, x);
            x += nodes[child].total_ns;
        }
        while (!todo.empty()) {
            const auto [index, depth, node_x] = todo.back();
            todo.pop_back();
            const ContextNode& node = nodes[index];
            if (node.calls == 0 || node.total_ns < min_width)
                continue;
            if (options.max_depth && static_cast<std::size_t>(depth) > deepest) {
                // One grey box for the call paths from here up.
                const std::uint64_t paths = 1 + paths_below(nodes, index);
                flames.push_back(
                    Flame{cut_label(paths), node.total_ns, 0, 0, depth, node_x, "top"});
                max_depth = std::max(max_depth, depth);
                deep += paths;
                continue;
            }
            flames.push_back(Flame{model.label(node.id), node.total_ns, node.self_ns, node.calls,
                                   depth, node_x,
                                   node.id.is_kernel ? "kernel"
                                   : node.id.is_c    ? "c"
                                                     : "py"});
            max_depth = std::max(max_depth, depth);
            Timestamp child_x = node_x;
            for (const std::uint32_t child : node.children) {
                todo.emplace_back(child, depth + 1, child_x);
                child_x += nodes[child].total_ns;
            }
        }
        thread_x += thread_total;
    }
    const double total = grand_total > 0 ? static_cast<double>(grand_total) : 1.0;
    const int row = 16;
    const int height = 34 + (max_depth + 1) * row + 26;

    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" height=\"" << height
        << "\" viewBox=\"0 0 1200 " << height
        << "\" font-family=\"Verdana,sans-serif\" font-size=\"11\">\n"
        << "<style>.f rect{stroke:#fff;stroke-width:.5;cursor:pointer}"
           ".f text{pointer-events:none;fill:#000}.f.m rect{fill:#e6f !important}"
           ".f:hover rect{stroke:#000}.b{cursor:pointer;fill:#06c}</style>\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n"
        << "<text x=\"600\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">" << xml_text(title)
        << "</text>\n"
        << "<text id=\"reset\" class=\"b\" x=\"10\" y=\"20\" display=\"none\">Reset zoom</text>\n"
        << "<text id=\"search\" class=\"b\" x=\"1190\" y=\"20\" text-anchor=\"end\">Search</text>\n"
        << "<text id=\"details\" x=\"10\" y=\"" << height - 8 << "\"> </text>\n"
        << "<g id=\"frames\">\n";
    // Each box is a line; once the output reaches options.max_bytes, the boxes left are left out
    // (the deepest last: a box's parent comes before it) and the document is closed all the same.
    Budget boxes(out, options.max_bytes, "boxes");
    for (const Flame& flame : flames) {
        if (boxes.is_full()) {
            boxes.skip();
            continue;
        }
        const double percent = 100.0 * static_cast<double>(flame.total) / total;
        std::string details = flame.label + " — " + format_duration(flame.total) +
                              printf_string(" (%.2f%%)", percent);
        if (flame.calls)
            details += ", self " + format_duration(flame.self) + ", " +
                       std::to_string(flame.calls) + (flame.calls == 1 ? " call" : " calls");
        // The unzoomed layout is written out too, so that viewers without scripts show it;
        // the script redoes the same layout on load and at each zoom.
        const double x = static_cast<double>(flame.x) / total;
        const double w = static_cast<double>(flame.total) / total;
        const double px = 10 + x * 1180;
        const double pw = w * 1180;
        const int py = height - 26 - (flame.depth + 1) * row;
        std::ostringstream box;
        box << "<g class=\"f\" data-x=\"" << printf_string("%.9f", x) << "\" data-w=\""
            << printf_string("%.9f", w) << "\" data-d=\"" << flame.depth << "\" data-l=\""
            << xml_text(flame.label) << "\"><title>" << xml_text(details) << "</title><rect x=\""
            << printf_string("%.2f", px) << "\" y=\"" << py << "\" width=\""
            << printf_string("%.2f", pw) << "\" height=\"" << row - 1 << "\" fill=\""
            << flame_color(flame) << "\" rx=\"2\"/><text x=\"" << printf_string("%.2f", px + 3)
            << "\" y=\"" << py + row - 4 << "\">" << xml_text(fit_label(flame.label, pw))
            << "</text></g>\n";
        boxes.line(box.str());
    }
    out << "</g>\n<script><![CDATA[\n"
           "(function(){\n"
           "var W=1200,P=10,R="
        << row << ",B=" << height - 26
        << ",zx=0,zw=1,zd=0,E=1e-9;\n"
           "var gs=[].slice.call(document.querySelectorAll('g.f'));\n"
           "var det=document.getElementById('details'),rst=document.getElementById('reset');\n"
           "function num(g,k){return +g.getAttribute('data-'+k);}\n"
           "function fit(s,w){var n=Math.floor((w-6)/6.5);"
           "return n<3?'':s.length<=n?s:s.slice(0,n-2)+'..';}\n"
           "function layout(){gs.forEach(function(g){\n"
           " var x=num(g,'x'),w=num(g,'w'),d=num(g,'d'),r=g.querySelector('rect'),"
           "t=g.querySelector('text');\n"
           " var inside=d>=zd&&x>=zx-E&&x+w<=zx+zw+E,anc=d<zd&&x<=zx+E&&x+w>=zx+zw-E;\n"
           " var px=anc?P:P+(x-zx)/zw*(W-2*P),pw=anc?W-2*P:w/zw*(W-2*P);\n"
           " if(!(inside||anc)||pw<0.3){g.setAttribute('display','none');return;}\n"
           " g.removeAttribute('display');var py=B-(d+1)*R;\n"
           " r.setAttribute('x',px);r.setAttribute('y',py);r.setAttribute('width',pw);"
           "r.setAttribute('height',R-1);r.setAttribute('opacity',anc?0.5:1);\n"
           " t.setAttribute('x',px+3);t.setAttribute('y',py+R-4);"
           "t.textContent=fit(g.getAttribute('data-l'),pw);});\n"
           " rst.setAttribute('display',zw<1||zd>0?'inline':'none');}\n"
           "gs.forEach(function(g){\n"
           " g.addEventListener('click',function(){zx=num(g,'x');zw=num(g,'w')||1;"
           "zd=num(g,'d');layout();});\n"
           " g.addEventListener('mouseover',function(){"
           "det.textContent=g.querySelector('title').textContent;});});\n"
           "rst.addEventListener('click',function(){zx=0;zw=1;zd=0;layout();});\n"
           "document.getElementById('search').addEventListener('click',function(){\n"
           " var q=prompt('Search frames (regular expression), empty to clear','');\n"
           " if(q===null)return;var re=null;try{re=q?new RegExp(q):null;}catch(e){return;}\n"
           " var n=0;gs.forEach(function(g){var m=re&&re.test(g.getAttribute('data-l'));\n"
           "  if(m){g.classList.add('m');n++;}else g.classList.remove('m');});\n"
           " det.textContent=re?n+' frames match '+q:' ';});\n"
           "layout();})();\n"
           "]]></script>\n</svg>\n";
    return boxes.cuts(deep);
}

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
