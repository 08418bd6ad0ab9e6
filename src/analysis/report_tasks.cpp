// The tasks format: per thread, its asyncio tasks as a table (nested under their creators),
// then each task's figures and call tree, then what the thread ran outside tasks (the event
// loop). A task's tree is its own (StackModel::task_nodes()): its coroutines' frames nest as
// they await each other, each resumption part of the same call.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

namespace {

// The most frames of a creation place named ("... > " before them), and the most creator
// levels the table indents.
constexpr std::size_t max_place_frames = 4;
constexpr std::size_t max_indent = 8;

// The most bytes of a name that a line repeats for another task or a frame (the task that
// created it, what it awaited, where it was created): a name of a megabyte would otherwise be
// written once per task that refers to it.
constexpr std::size_t max_reference = 120;

std::string task_name(const Task& task)
{
    return task.name.empty() ? "(unnamed coroutine)" : task.name;
}

// text cut to max_reference bytes (not inside a character), "..." after it when cut.
std::string brief(std::string text)
{
    if (text.size() <= max_reference)
        return text;
    std::size_t end = max_reference;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80)
        --end;
    text.resize(end);
    return text + "...";
}

// "a > b > c": the frames from below top down to index, at most the innermost
// max_place_frames.
std::string frame_path(const StackModel& model, const std::vector<ContextNode>& nodes,
                       std::uint32_t index, std::uint32_t top)
{
    std::vector<std::uint32_t> frames;
    std::size_t count = 0;
    for (std::uint32_t at = index; at != top && at != 0; at = nodes[at].parent)
        if (count++ < max_place_frames)
            frames.push_back(at);
    std::string path = count > frames.size() ? "... > " : "";
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
        path += brief(model.label(nodes[*it].id)) + (it + 1 == frames.rend() ? "" : " > ");
    return path;
}

// "created by Task-1 in __main__:main > asyncio.tasks:gather", or "created outside tasks in
// ...".
std::string origin(const StackModel& model, const Thread& thread, const Task& task)
{
    std::string text;
    std::string place;
    if (task.is_created_in_task && task.creator != no_task) {
        const Task& creator = model.tasks()[task.creator];
        text = "created by " + brief(task_name(creator));
        place = frame_path(model, model.task_nodes(), task.created_at, creator.root);
    } else {
        text = "created outside tasks";
        if (task.created_at < thread.nodes().size())
            place = frame_path(model, thread.nodes(), task.created_at, 0);
    }
    return place.empty() ? text : text + " in " + place;
}

// "sleep 6.651 ms (4), task 1.000 ms (1: ctask)", kinds in a fixed order.
std::string awaits_text(const StackModel& model, const Task& task)
{
    static constexpr AwaitKind order[] = {AwaitKind::sleep, AwaitKind::future, AwaitKind::gather,
                                          AwaitKind::task,  AwaitKind::yield,  AwaitKind::unknown};
    std::string text;
    for (const AwaitKind kind : order) {
        const auto slot = static_cast<std::size_t>(kind);
        if (task.awaits[slot] == 0)
            continue;
        text += text.empty() ? "" : ", ";
        text += kind == AwaitKind::unknown ? std::string("until the trace's end")
                                           : std::string(await_kind_name(kind));
        text += ' ' + format_duration(task.await_ns[slot]) + " (" + thousands(task.awaits[slot]);
        if (kind == AwaitKind::task && !task.awaited_tasks.empty()) {
            text += ':';
            for (std::size_t i = 0; i < task.awaited_tasks.size() && i < 3; ++i)
                text += (i ? ", " : " ") + brief(task_name(model.tasks()[task.awaited_tasks[i]]));
            if (task.awaited_tasks.size() > 3)
                text += ", ...";
        }
        text += ')';
    }
    return text.empty() ? "nothing" : text;
}

std::string figure(const char* name, Timestamp ns, const std::string& text)
{
    return printf_string("  %-9s%11s  ", name, format_duration(ns).c_str()) + text + '\n';
}

// The tasks of a thread a report shows: at most limit (0: all), those that ran longest, in
// the order they were created. Throws std::bad_alloc.
std::vector<std::uint32_t> shown_tasks(const std::vector<Task>& tasks,
                                       std::vector<std::uint32_t> of_thread, std::size_t limit)
{
    if (limit && of_thread.size() > limit) {
        std::stable_sort(of_thread.begin(), of_thread.end(), [&](std::uint32_t a, std::uint32_t b) {
            return tasks[a].running_ns > tasks[b].running_ns;
        });
        of_thread.resize(limit);
        std::sort(of_thread.begin(), of_thread.end());
    }
    return of_thread;
}

} // namespace

Cuts write_tasks(const StackModel& model, std::ostream& stream, Timestamp min_duration,
                 const ReportOptions& options)
{
    Budget out(stream, options.max_bytes);
    TreeCounts counts;
    std::uint64_t left_out = 0;
    const auto& tasks = model.tasks();
    // How deep each task is in its creators' chain (a creator comes before what it created).
    std::vector<std::size_t> depth(tasks.size(), 0);
    for (std::size_t i = 0; i < tasks.size(); ++i)
        if (tasks[i].creator != no_task && tasks[i].creator < i)
            depth[i] = depth[tasks[i].creator] + 1;
    for (const Thread* thread : model.threads()) {
        if (thread->event_count() == 0)
            continue; // only named by a python:thread event
        std::vector<std::uint32_t> of_thread;
        Timestamp running = 0;
        for (std::uint32_t i = 0; i < tasks.size(); ++i) {
            if (tasks[i].thread == thread->key()) {
                of_thread.push_back(i);
                running += tasks[i].running_ns;
            }
        }
        const std::vector<ContextNode> outside = task_tree(model, *thread, false);
        const Timestamp outside_total = tree_total(outside, 0);
        if (of_thread.empty()) {
            out.line(thread_title(*thread, options) + ": no asyncio task, " +
                     format_duration(outside_total) + " in frames\n");
        } else {
            out.line(thread_title(*thread, options) + ": " + thousands(of_thread.size()) +
                     (of_thread.size() == 1 ? " asyncio task" : " asyncio tasks") + ", running " +
                     format_duration(running) + "; " + format_duration(outside_total) +
                     " in frames outside them\n");
            const std::vector<std::uint32_t> shown = shown_tasks(tasks, of_thread, options.limit);
            left_out += of_thread.size() - shown.size();
            out.line(printf_string("  %11s %11s %11s %11s %7s  %-9s  %s\n", "wall", "to start",
                                   "running", "awaiting", "steps", "end", "task"));
            for (const std::uint32_t i : shown) {
                const Task& task = tasks[i];
                out.line(printf_string("  %11s %11s %11s %11s %7s  %-9s  ",
                                       format_duration(task.wall_ns).c_str(),
                                       format_duration(task.scheduled_ns).c_str(),
                                       format_duration(task.running_ns).c_str(),
                                       format_duration(task.awaiting_ns()).c_str(),
                                       thousands(task.steps).c_str(), task_end_name(task.ended)) +
                         std::string(2 * std::min(depth[i], max_indent), ' ') + task_name(task) +
                         '\n');
            }
            if (shown.size() < of_thread.size())
                out.line("  ... " + thousands(of_thread.size() - shown.size()) +
                         " more tasks, which ran less: --limit 0 shows them all\n");
            for (const std::uint32_t i : shown) {
                const Task& task = tasks[i];
                out.line("\ntask " + task_name(task) + ": " + origin(model, *thread, task) + '\n');
                out.line(figure("wall", task.wall_ns,
                                std::string("from its creation to its end: ") +
                                    task_end_name(task.ended)));
                out.line(figure("to start", task.scheduled_ns, "before its first step"));
                out.line(
                    figure("running", task.running_ns,
                           "in " + thousands(task.steps) + (task.steps == 1 ? " step" : " steps")));
                out.line(figure("awaiting", task.awaiting_ns(), awaits_text(model, task)));
                const auto& nodes = model.task_nodes();
                const TreeLimits limits{
                    min_duration,
                    static_cast<Timestamp>(options.min_share *
                                           static_cast<double>(tree_total(nodes, task.root))),
                    options.max_depth};
                write_tree_nodes(model, nodes, task.root, 2, limits, out, counts);
            }
            out.line("\noutside tasks: " + format_duration(outside_total) + " in frames\n");
        }
        const TreeLimits limits{
            min_duration,
            static_cast<Timestamp>(options.min_share * static_cast<double>(outside_total)),
            options.max_depth};
        write_tree_nodes(model, outside, 0, of_thread.empty() ? 1 : 2, limits, out, counts);
    }
    write_tree_notes(out, counts, min_duration, options,
                     "their task's time (outside tasks: of their thread's)");
    if (left_out)
        out.put(thousands(left_out) + (left_out == 1 ? " task" : " tasks") +
                " not shown, with their trees: --limit 0 shows them all\n");
    out.put_cut_line();
    return out.cuts(counts.deep);
}

} // namespace pyust::analysis
