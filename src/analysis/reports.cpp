// What the report writers share (report_common.hpp) and what reports.hpp publishes beside the
// formats: number and time formats, the names of processes and threads, the account of what was
// incomplete (write_gaps) and of what the limits cut (cut_note). Each format has a file of its
// own: report_profile.cpp, report_tree.cpp, report_lines.cpp, report_folded.cpp,
// report_chrome.cpp, report_svg.cpp (with flamegraph.js and flamegraph.css), report_top.cpp.
#include "analysis/reports.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "analysis/report_common.hpp"

namespace pyust::analysis {

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

// The call paths with calls below a node of a thread's tree (the node itself not counted).
std::uint64_t paths_below(const std::vector<ContextNode>& nodes, std::uint32_t index)
{
    std::uint64_t count = 0;
    std::vector<std::uint32_t> todo(nodes[index].children.begin(), nodes[index].children.end());
    while (!todo.empty()) {
        const ContextNode& node = nodes[todo.back()];
        todo.pop_back();
        count += !node.is_empty();
        todo.insert(todo.end(), node.children.begin(), node.children.end());
    }
    return count;
}

// The label of what a depth limit cut: "[... 19,000 frames cut]".
std::string cut_label(std::uint64_t frames)
{
    return "[... " + thousands(frames) + (frames == 1 ? " frame cut]" : " frames cut]");
}

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

namespace {

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

std::string lost_start_note(const ReportOptions& options, std::int64_t pid, const Gap& gap)
{
    return process_title(options, pid) + ": " + gap_kind_name(gap.kind) + ": its first " +
           format_duration(gap.end - gap.begin) + ", from " + format_time(gap.begin) + " to " +
           format_time(gap.end);
}

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

} // namespace pyust::analysis
