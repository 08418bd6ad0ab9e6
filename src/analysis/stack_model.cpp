// The stack-rebuilding core (see stack_model.hpp).
#include "analysis/stack_model.hpp"

#include "analysis/native_names.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace pyust::analysis {

const char* gap_kind_name(GapKind kind) noexcept
{
    switch (kind) {
    case GapKind::unmatched_return:
        return "returns without a call (trace started mid-call)";
    case GapKind::mismatched_return:
        return "frames closed by the return of an outer frame";
    case GapKind::open_at_end:
        return "frames still open at the end, closed at the last event";
    case GapKind::discarded_events:
        return "events discarded by the tracer";
    case GapKind::lost_start:
        return "start not recorded (the session recorded the process late)";
    }
    return "?";
}

Thread::Thread(ThreadKey key) : m_key(key)
{
    m_nodes.emplace_back(); // the root
}

std::uint32_t Thread::child_node(std::uint32_t parent, FrameId id, bool is_task_root)
{
    const auto [it, is_new] = m_child_index.try_emplace(ChildKey{parent, id, is_task_root},
                                                        static_cast<std::uint32_t>(m_nodes.size()));
    if (is_new) {
        ContextNode& node = m_nodes.emplace_back();
        node.id = id;
        node.parent = parent;
        node.is_task_root = is_task_root;
        m_nodes[parent].children.push_back(it->second);
    }
    return it->second;
}

std::size_t Thread::open_depth(std::uint64_t code_id) const noexcept
{
    std::size_t index = m_frames.size();
    while (index > 0) {
        const Frame& frame = m_frames[index - 1];
        if (!frame.id.is_c && frame.id.value == code_id)
            break;
        --index;
    }
    return index;
}

std::size_t Thread::open_native_depth(FrameId id) const noexcept
{
    std::size_t index = m_frames.size();
    while (index > 0 && !(m_frames[index - 1].id == id))
        --index;
    return index;
}

void StackModel::set_window(Timestamp begin, Timestamp end) noexcept
{
    m_begin = begin;
    m_end = end;
}

std::string code_label(const CodeNames& info)
{
    std::string label;
    // Code run without a module (exec'd with globals that have no __name__) is told apart by
    // its file: every jinja2 template would otherwise be "?:root".
    if (info.is_registered && info.module == "?")
        label = info.file;
    else
        label = info.module;
    label.push_back(':');
    label.append(info.qualname);
    // One code object per `def` is the rule; but code.replace(co_name=...) makes renamed copies
    // of one function's code (numpy's array_function_dispatch wrappers: every public_api is
    // named after the function it dispatches), and co_name is then what tells them apart.
    // Before 3.11 the qualified name is co_name itself: equal, nothing added.
    if (!info.name.empty()) {
        const std::size_t dot = info.qualname.rfind('.');
        const std::string_view last = dot == std::string::npos
                                          ? std::string_view(info.qualname)
                                          : std::string_view(info.qualname).substr(dot + 1);
        if (last != info.name) {
            label.push_back('[');
            label.append(info.name);
            label.push_back(']');
        }
    }
    return label;
}

void StackModel::on_code(std::uint64_t id, std::string module, std::string qualname,
                         std::string file, std::uint32_t first_line, std::string name)
{
    CodeNames named;
    named.module = printable(module);
    named.qualname = printable(qualname);
    named.name = printable(name);
    named.file = file.empty() ? std::string(no_file_name) : printable(file);
    named.first_line = first_line;
    named.is_registered = true;
    named.label = code_label(named);
    std::uint64_t current = current_id(id);
    const auto it = m_codes.find(current);
    if (it != m_codes.end() && it->second.is_registered) {
        const CodeNames& known = it->second;
        if (known.module == named.module && known.qualname == named.qualname &&
            known.name == named.name && known.file == named.file &&
            known.first_line == named.first_line)
            return; // the same code named again (a rundown)
        current = reused_code_bit | m_next_reused++;
        m_reused_ids[id] = current;
    }
    m_codes[current] = std::move(named);
}

bool StackModel::on_call_name(std::uint64_t id, std::string_view name)
{
    id = current_id(id);
    // "?" is what filter.pyust.expand names a call whose id no python:code named (a string
    // field is never empty: see tracepoints/python_tp.h); no qualified name is "?".
    if (name.empty() || name == "?")
        return false;
    const auto [it, is_new] = m_codes.try_emplace(id);
    if (!is_new)
        return false;
    CodeNames& info = it->second;
    info.module = "?";
    info.qualname = printable(name);
    info.label = code_label(info);
    return true;
}

void StackModel::on_thread_name(const ThreadKey& key, std::string name)
{
    auto& slot = m_threads[key];
    if (!slot) {
        slot = std::make_unique<Thread>(key);
        m_tids[key.tid] = slot.get();
    }
    slot->m_name = printable(name);
}

Thread& StackModel::thread_at(const ThreadKey& key, Timestamp ts, std::uint64_t stream)
{
    Thread* thread = m_last_thread;
    if (!thread || !(thread->m_key == key)) {
        auto& slot = m_threads[key];
        if (!slot) {
            slot = std::make_unique<Thread>(key);
            m_tids[key.tid] = slot.get();
        }
        thread = slot.get();
        m_last_thread = thread;
    }
    if (thread->m_event_count == 0) {
        thread->m_first_ts = ts;
        thread->m_last_ts = ts;
    } else if (ts > thread->m_last_ts) {
        thread->m_last_ts = ts;
    }
    ++thread->m_event_count;
    if (thread->m_last_stream != stream) {
        auto& seen = m_stream_threads[stream];
        if (std::find(seen.begin(), seen.end(), thread) == seen.end())
            seen.push_back(thread);
        thread->m_last_stream = stream;
    }
    if (is_off_cpu(*thread))
        pop(*thread, thread->m_last_ts);
    return *thread;
}

void StackModel::note(Thread& thread, GapKind kind, Timestamp begin, Timestamp end,
                      std::uint64_t count)
{
    // One record per kind and thread, widened at each new occurrence, except lost-event
    // windows, which are each worth their own line.
    if (kind != GapKind::discarded_events) {
        for (Gap& gap : thread.m_gaps) {
            if (gap.kind == kind) {
                gap.begin = std::min(gap.begin, begin);
                gap.end = std::max(gap.end, end);
                gap.count += count;
                return;
            }
        }
    }
    thread.m_gaps.push_back(Gap{kind, begin, end, count});
}

void StackModel::push(Thread& thread, FrameId id)
{
    const std::uint32_t parent = thread.m_frames.empty() ? 0 : thread.m_frames.back().node;
    Frame frame;
    frame.id = id;
    frame.begin = thread.m_last_ts;
    frame.node = thread.child_node(parent, id);
    if (!thread.m_steps.empty())
        join_task(thread, frame);
    thread.m_frames.push_back(frame);
    ++thread.m_active[id];
}

void StackModel::close_line(Frame& frame, Timestamp ts)
{
    if (frame.line == 0)
        return;
    if (frame.line_begin <= m_end && ts >= m_begin) {
        LineStats& stats = m_lines[LineKey{frame.id.value, frame.line}];
        ++stats.hits;
        stats.total_ns += std::max<Timestamp>(0, clip_end(ts) - clip_begin(frame.line_begin));
    }
    frame.line = 0;
}

void StackModel::pop(Thread& thread, Timestamp ts, bool may_suspend)
{
    Frame& frame = thread.m_frames.back();
    const bool overlaps = frame.begin <= m_end && ts >= m_begin;
    const Timestamp begin = clip_begin(frame.begin);
    const Timestamp end = clip_end(ts);
    const Timestamp total = overlaps ? std::max<Timestamp>(0, end - begin) : 0;
    if (overlaps && m_listener)
        m_listener->on_frame_closed(thread, frame, begin, end);
    close_line(frame, ts);
    auto active = thread.m_active.find(frame.id);
    const bool is_outermost = active == thread.m_active.end() || --active->second == 0;
    if (overlaps) {
        const Timestamp self = std::max<Timestamp>(0, total - frame.child_ns);
        ContextNode& node = thread.m_nodes[frame.node];
        node.total_ns += total;
        node.self_ns += self;
        FunctionStats& stats = m_functions[frame.id];
        stats.self_ns += self;
        if (is_outermost)
            stats.total_ns += total;
        if (frame.task != no_task) {
            ContextNode& task_node = m_task_nodes[frame.task_node];
            task_node.total_ns += total;
            task_node.self_ns += self;
        }
        frame.is_overlapping = true;
    }
    if (may_suspend && frame.task != no_task && !frame.id.is_c)
        thread.m_returned.push_back(frame); // suspended, or returned: the task's next step says
    else
        end_call(thread, frame);
    thread.m_frames.pop_back();
    if (!thread.m_frames.empty())
        thread.m_frames.back().child_ns += total;
}

void StackModel::end_call(Thread& thread, const Frame& frame)
{
    if (!frame.is_overlapping)
        return;
    ++thread.m_nodes[frame.node].calls;
    ++m_functions[frame.id].calls;
    if (frame.task != no_task)
        ++m_task_nodes[frame.task_node].calls;
}

void StackModel::on_call(Thread& thread, std::uint64_t code_id)
{
    const FrameId id{current_id(code_id), false};
    if (thread.m_steps.empty() || !resume_call(thread, id))
        push(thread, id);
}

void StackModel::on_return(Thread& thread, std::uint64_t code_id)
{
    code_id = current_id(code_id);
    const Timestamp ts = thread.m_last_ts;
    const std::size_t index = thread.open_depth(code_id);
    if (index == 0) {
        // Nothing of that code is open: it was called before the trace started (or its call
        // was lost). The stack stays as it is; the region before this return is uncertain.
        close_line(thread.m_orphan, ts);
        note(thread, GapKind::unmatched_return, thread.m_first_ts, ts, 1);
        return;
    }
    pop_to(thread, index, ts, true);
}

void StackModel::pop_to(Thread& thread, std::size_t depth, Timestamp ts, bool may_suspend)
{
    auto& frames = thread.m_frames;
    const std::size_t above = frames.size() - depth;
    if (above > 0) {
        note(thread, GapKind::mismatched_return, frames[depth].begin, ts, above);
        for (std::size_t i = 0; i < above; ++i)
            pop(thread, ts);
    }
    pop(thread, ts, may_suspend);
    if (!thread.m_steps.empty())
        end_steps(thread, ts);
}

FrameId StackModel::native_id(std::int64_t pid, std::uint64_t address, std::string_view func,
                              std::string_view bin)
{
    const auto [it, is_new] =
        m_native_index.try_emplace(NativeKey{pid, address}, m_native_labels.size());
    if (!is_new && (m_native_resolved[it->second] || func.empty()))
        return FrameId{it->second, true, true};
    // debug-info writes func as "name+offset" and bin as "file.so+offset" (or "@address").
    std::string label;
    bool is_cython = false;
    if (!func.empty()) {
        const std::size_t plus = func.rfind('+');
        const std::string_view symbol = func.substr(0, plus == 0 ? func.size() : plus);
        label = m_raw_native_names ? std::string(symbol) : readable_native_name(symbol);
        is_cython =
            !m_raw_native_names && !cython_python_name(without_clone_suffix(symbol)).empty();
    } else if (!bin.empty()) {
        label.assign(bin);
    } else {
        char text[24];
        std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
        label.assign(text);
    }
    label = printable(label);
    if (!is_cython) { // a function per address
        if (is_new) {
            m_native_labels.push_back(std::move(label));
            m_native_resolved.push_back(!func.empty());
        } else { // first seen unresolved: renamed, with the frames and nodes made so far
            m_native_labels[it->second] = std::move(label);
            m_native_resolved[it->second] = true;
        }
        return FrameId{it->second, true, true};
    }
    // One function per Python name in a binary: Cython's wrapper, implementation and C
    // function of one Python function. (Not other names: debug-info names a C++ function by
    // its DWARF name when the binary has one, "norm" for every namesake and overload.)
    const std::size_t bin_end = std::min(bin.find('+'), bin.find('@'));
    std::string name_key = std::to_string(pid);
    name_key.push_back('\0');
    name_key.append(bin.substr(0, bin_end));
    name_key.push_back('\0');
    name_key.append(label);
    const auto [named, is_new_name] = m_native_by_name.try_emplace(std::move(name_key), it->second);
    if (is_new) {
        if (is_new_name) {
            m_native_labels.push_back(std::move(label));
            m_native_resolved.push_back(true);
        } else {
            it->second = named->second;
        }
    } else {
        // First seen unresolved: renamed in place, so that the frames and nodes made so far
        // read the name too (such a function stays apart from another of the same name).
        m_native_labels[it->second] = std::move(label);
        m_native_resolved[it->second] = true;
    }
    return FrameId{it->second, true, true};
}

void StackModel::on_native_entry(Thread& thread, std::uint64_t address, std::string_view func,
                                 std::string_view bin)
{
    const FrameId id = native_id(thread.m_key.pid, address, func, bin);
    if (!thread.m_frames.empty()) {
        Frame& top = thread.m_frames.back();
        // Another function of the same name, called directly (not the same one again: that is
        // a recursive call, a frame of its own).
        if (top.id == id && address != top.native_address && address != top.merged_address) {
            ++top.merged;
            top.merged_address = address;
            return;
        }
    }
    push(thread, id);
    thread.m_frames.back().native_address = address;
}

void StackModel::on_native_exit(Thread& thread, std::uint64_t address, bool has_address)
{
    const Timestamp ts = thread.m_last_ts;
    std::size_t index = 0;
    if (has_address) {
        const auto it = m_native_index.find(NativeKey{thread.m_key.pid, address});
        if (it != m_native_index.end())
            index = thread.open_native_depth(FrameId{it->second, true, true});
    } else if (!thread.m_frames.empty() && thread.m_frames.back().id.is_native) {
        index = thread.m_frames.size();
    }
    if (index == 0) {
        note(thread, GapKind::unmatched_return, thread.m_first_ts, ts, 1);
        return;
    }
    Frame& frame = thread.m_frames[index - 1];
    if (frame.merged > 0 && (!has_address || address != frame.native_address)) {
        // A merged call ends: the frame stays open. Frames above it lost their exits.
        if (index < thread.m_frames.size())
            pop_to(thread, index + 1, ts);
        Frame& merged_into = thread.m_frames[index - 1];
        --merged_into.merged;
        if (merged_into.merged == 0)
            merged_into.merged_address = 0;
        return;
    }
    pop_to(thread, index, ts);
}

void StackModel::on_syscall_entry(Thread& thread, std::string_view name)
{
    if (!thread.m_frames.empty() && thread.m_frames.back().id.is_kernel)
        pop(thread, thread.m_last_ts); // its exit was lost
    if (name == "exit" || name == "exit_group")
        return;
    m_c_key.assign(name);
    const auto [it, is_new] = m_kernel_index.try_emplace(m_c_key, m_kernel_labels.size());
    if (is_new)
        m_kernel_labels.emplace_back(name);
    push(thread, FrameId{it->second, true, false, true});
}

void StackModel::on_syscall_exit(Thread& thread)
{
    if (!thread.m_frames.empty() && thread.m_frames.back().id.is_kernel)
        pop(thread, thread.m_last_ts);
}

void StackModel::on_user_space(Thread& thread)
{
    // thread_at closed an [off-cpu] already; the system call it stood on closes now.
    while (!thread.m_frames.empty() && thread.m_frames.back().id.is_kernel)
        pop(thread, thread.m_last_ts);
}

void StackModel::on_switch_out(Thread& thread)
{
    if (!is_off_cpu(thread))
        push(thread, off_cpu_frame);
}

void StackModel::on_switch_in(std::int64_t tid, Timestamp ts)
{
    const auto it = m_tids.find(tid);
    if (it == m_tids.end() || !is_off_cpu(*it->second))
        return;
    Thread& thread = *it->second;
    if (ts > thread.m_last_ts)
        thread.m_last_ts = ts;
    pop(thread, thread.m_last_ts);
}

void StackModel::on_c_call(Thread& thread, std::string_view name, std::string_view owner)
{
    m_c_key.assign(owner);
    m_c_key.push_back('\0');
    m_c_key.append(name);
    const auto [it, is_new] = m_c_index.try_emplace(m_c_key, m_c_labels.size());
    if (is_new) {
        std::string label = printable(owner);
        if (!label.empty())
            label.push_back(':');
        label.append(printable(name));
        if (label.empty())
            label = "<C ?>"; // no owner, no name: an empty frame would break folded's lines
        m_c_labels.push_back(std::move(label));
    }
    push(thread, FrameId{it->second, true});
}

void StackModel::on_c_return(Thread& thread)
{
    if (!thread.m_frames.empty() && thread.m_frames.back().id.is_c &&
        !thread.m_frames.back().id.is_native && !thread.m_frames.back().id.is_kernel) {
        pop(thread, thread.m_last_ts);
        return;
    }
    note(thread, GapKind::unmatched_return, thread.m_first_ts, thread.m_last_ts, 1);
}

void StackModel::on_line(Thread& thread, std::uint64_t code_id, std::uint32_t line)
{
    code_id = current_id(code_id);
    const Timestamp ts = thread.m_last_ts;
    Frame* frame = nullptr;
    if (thread.m_frames.empty()) {
        frame = &thread.m_orphan;
        close_line(*frame, ts);
        frame->id = FrameId{code_id, false};
    } else if (!thread.m_frames.back().id.is_c && thread.m_frames.back().id.value == code_id) {
        frame = &thread.m_frames.back();
    }
    if (!frame) {
        // A line of a frame that is not the innermost one: count the hit, the time is unknown.
        if (ts >= m_begin && ts <= m_end)
            ++m_lines[LineKey{code_id, line}].hits;
        return;
    }
    close_line(*frame, ts);
    frame->line = line;
    frame->line_begin = ts;
}

void StackModel::on_discarded(std::uint64_t stream, Timestamp begin, Timestamp end,
                              std::uint64_t count)
{
    m_stream_gaps[stream].push_back(Gap{GapKind::discarded_events, begin, end, count});
    const auto seen = m_stream_threads.find(stream);
    if (seen == m_stream_threads.end())
        return;
    for (Thread* thread : seen->second)
        note(*thread, GapKind::discarded_events, begin, end, count);
}

void StackModel::on_lost_start(std::int64_t pid, Timestamp ts, std::uint64_t lost_ns)
{
    const Timestamp lost = static_cast<Timestamp>(std::min<std::uint64_t>(lost_ns, INT64_MAX));
    const Timestamp begin = ts >= INT64_MIN + lost ? ts - lost : INT64_MIN; // a damaged trace's
    m_lost_starts.emplace_back(pid, Gap{GapKind::lost_start, begin, ts, 0});
}

void StackModel::finish()
{
    for (auto& [key, thread] : m_threads) {
        const Timestamp ts = thread->m_last_ts;
        while (!thread->m_frames.empty() && thread->m_frames.back().id.is_kernel)
            pop(*thread, ts);
        if (!thread->m_frames.empty()) {
            note(*thread, GapKind::open_at_end, thread->m_frames.front().begin, ts,
                 thread->m_frames.size());
            while (!thread->m_frames.empty())
                pop(*thread, ts);
        }
        close_line(thread->m_orphan, ts);
        end_steps(*thread, ts, true);
    }
    finish_tasks();
}

std::string StackModel::label(FrameId id) const
{
    if (id.is_native)
        return id.value < m_native_labels.size() ? m_native_labels[id.value]
                                                 : std::string("<native ?>");
    if (id.is_kernel)
        return id.value < m_kernel_labels.size() ? m_kernel_labels[id.value]
                                                 : std::string("<kernel ?>");
    if (id.is_c)
        return id.value < m_c_labels.size() ? m_c_labels[id.value] : std::string("<C ?>");
    if (const CodeNames* info = code(id.value))
        return info->label;
    char text[40];
    std::snprintf(text, sizeof text, "<unknown 0x%llx>", static_cast<unsigned long long>(id.value));
    return text;
}

std::string StackModel::location(FrameId id) const
{
    if (id.is_kernel)
        return "(kernel)";
    if (id.is_c)
        return "(C)";
    const CodeNames* info = code(id.value);
    if (!info)
        return "(unregistered)";
    if (!info->is_registered)
        return "(named by its call)";
    return info->file + ':' + std::to_string(info->first_line);
}

const CodeNames* StackModel::code(std::uint64_t id) const noexcept
{
    const auto it = m_codes.find(id);
    return it == m_codes.end() ? nullptr : &it->second;
}

std::vector<const Thread*> StackModel::threads() const
{
    std::vector<const Thread*> result;
    result.reserve(m_threads.size());
    for (const auto& [key, thread] : m_threads)
        result.push_back(thread.get());
    std::sort(result.begin(), result.end(),
              [](const Thread* a, const Thread* b) { return a->key() < b->key(); });
    return result;
}

} // namespace pyust::analysis
