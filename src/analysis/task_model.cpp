// The stack model's asyncio side (see stack_model.hpp, "asyncio"): tasks, their steps, and the
// frames of their await chains, suspended at the end of a step and resumed by the next one.
//
// A step of a task (python:task_step) is a call of the task's root coroutine frame, made by the
// event loop (Handle._run, Task.__step, or create_task for an eager task's first step), that
// resumes the frames its previous step left suspended: the root, the frame it awaits, and so on,
// each a python:call of a frame already called. The step ends at the root's python:return, the
// last of a cascade of returns from the frame that yielded. Only the next step tells which
// frames of that cascade suspended (its `resumed`: how many of its first calls are
// resumptions) and which returned for good just before: the model keeps the cascade's frames
// (Thread::m_returned, then TaskState::suspended) with their time counted and their call not,
// and counts the call of each one once it is known to have returned.
#include <algorithm>
#include <string>

#include "analysis/stack_model.hpp"

namespace pyust::analysis {

const char* await_kind_name(AwaitKind kind) noexcept
{
    switch (kind) {
    case AwaitKind::yield:
        return "yield";
    case AwaitKind::sleep:
        return "sleep";
    case AwaitKind::future:
        return "future";
    case AwaitKind::task:
        return "task";
    case AwaitKind::gather:
        return "gather";
    case AwaitKind::unknown:
        return "unknown";
    }
    return "?";
}

const char* task_end_name(TaskEnd end) noexcept
{
    switch (end) {
    case TaskEnd::returned:
        return "returned";
    case TaskEnd::raised:
        return "raised";
    case TaskEnd::cancelled:
        return "cancelled";
    case TaskEnd::open:
        return "not ended";
    }
    return "?";
}

std::uint32_t StackModel::task_of(std::int64_t pid, std::uint64_t key) const noexcept
{
    const auto it = m_task_index.find(TaskKey{pid, key});
    return it == m_task_index.end() ? no_task : it->second;
}

bool StackModel::is_task_factory(FrameId id) const noexcept
{
    // The hook's task factories (src/hook/tasks.cpp role_of).
    const CodeNames* names = id.is_c ? nullptr : code(id.value);
    return names && ((names->module == "asyncio.base_events" &&
                      (names->qualname == "BaseEventLoop.create_task" ||
                       names->qualname == "create_task")) ||
                     (names->module == "asyncio.tasks" && names->qualname == "create_task"));
}

std::uint32_t StackModel::task_child(std::uint32_t parent, FrameId id)
{
    const auto [it, is_new] = m_task_children.try_emplace(
        Thread::ChildKey{parent, id, false}, static_cast<std::uint32_t>(m_task_nodes.size()));
    if (is_new) {
        ContextNode& node = m_task_nodes.emplace_back();
        node.id = id;
        node.parent = parent;
        m_task_nodes[parent].children.push_back(it->second);
    }
    return it->second;
}

std::uint32_t StackModel::new_task(Thread& thread, std::uint64_t key, std::uint64_t parent_key)
{
    const auto index = static_cast<std::uint32_t>(m_tasks.size());
    Task& task = m_tasks.emplace_back();
    m_task_states.emplace_back();
    task.key = key;
    task.thread = thread.m_key;
    task.created = task.end = thread.m_last_ts;
    // Created where the innermost frame is (an eager task: inside create_task), but for the
    // task factory's own frames: the hook names a task as create_task returns it, before its
    // python:return or after, depending on the back end.
    std::size_t depth = thread.m_frames.size();
    while (depth > 0 && is_task_factory(thread.m_frames[depth - 1].id))
        --depth;
    if (!thread.m_steps.empty()) {
        const std::uint32_t creator = thread.m_steps.back().task;
        task.creator = creator;
        task.is_created_in_task = true;
        task.created_at = depth > 0 && thread.m_frames[depth - 1].task == creator
                              ? thread.m_frames[depth - 1].task_node
                              : m_tasks[creator].root;
    } else if (const std::uint32_t creator =
                   parent_key ? task_of(thread.m_key.pid, parent_key) : no_task;
               creator != no_task) {
        task.creator = creator; // its step began before the trace
        task.is_created_in_task = true;
        task.created_at = m_tasks[creator].root;
    } else {
        task.created_at = depth == 0 ? 0 : thread.m_frames[depth - 1].node;
    }
    task.root = static_cast<std::uint32_t>(m_task_nodes.size());
    m_task_nodes.emplace_back();
    m_task_index[TaskKey{thread.m_key.pid, key}] = index;
    return index;
}

void StackModel::on_task(Thread& thread, std::uint64_t key, std::uint64_t parent_key,
                         std::string_view name)
{
    std::uint32_t index = task_of(thread.m_key.pid, key);
    // A later python:task of a task names it again (asyncio.create_task renames what the loop's
    // create_task made), and names a task first seen by its step (an eager task runs its first
    // step, and may end, before create_task returns it).
    if (index == no_task || (m_tasks[index].ended != TaskEnd::open && !m_tasks[index].name.empty()))
        index = new_task(thread, key, parent_key);
    Task& task = m_tasks[index];
    task.name = printable(name);
    if (task.creator == no_task && parent_key) {
        task.creator = task_of(thread.m_key.pid, parent_key);
        if (task.creator == index)
            task.creator = no_task;
    }
}

void StackModel::on_task_step(Thread& thread, std::uint64_t key, std::uint32_t resumed,
                              std::uint8_t awaited, std::uint64_t awaited_id, std::uint8_t thrown)
{
    const Timestamp ts = thread.m_last_ts;
    std::uint32_t index = task_of(thread.m_key.pid, key);
    if (index == no_task || m_tasks[index].ended != TaskEnd::open)
        index = new_task(thread, key, 0);
    TaskState& state = m_task_states[index];
    restore_outer(state); // a thrown step whose root never came (left out by the filter)
    if (thrown == 2) {
        state.is_suspended = false; // the asyncio step goes on: no await since
    } else if (state.is_suspended) {
        AwaitKind kind = awaited == 1   ? AwaitKind::yield
                         : awaited == 3 ? AwaitKind::task
                         : awaited == 4 ? AwaitKind::gather
                                        : AwaitKind::future;
        // asyncio.sleep(delay) awaits a future of its own: its frame, the innermost of those
        // the step resumes, tells it.
        const std::size_t chain = std::min<std::size_t>(resumed, state.suspended.size());
        if (kind == AwaitKind::future && chain > 0) {
            const Frame& innermost = state.suspended[chain - 1];
            const CodeNames* names = innermost.id.is_c ? nullptr : code(innermost.id.value);
            if (names && names->module == "asyncio.tasks" && names->qualname == "sleep")
                kind = AwaitKind::sleep;
        }
        add_await(thread, index, kind, state.suspended_at, ts);
        if (kind == AwaitKind::task) {
            const std::uint32_t other = task_of(thread.m_key.pid, awaited_id);
            auto& awaited_tasks = m_tasks[index].awaited_tasks;
            if (other != no_task && other != index &&
                std::find(awaited_tasks.begin(), awaited_tasks.end(), other) == awaited_tasks.end())
                awaited_tasks.push_back(other);
        }
        state.is_suspended = false;
    } else if (m_tasks[index].steps == 0) {
        m_tasks[index].scheduled_ns += clipped(m_tasks[index].created, ts);
    }
    if (thrown != 2)
        ++m_tasks[index].steps;
    if (resumed == 0)
        end_suspended(index);
    else if (thrown != 0)
        keep_outer(state, resumed);
    if (!thread.m_steps.empty() && thread.m_steps.back().is_root_pending)
        thread.m_steps.pop_back(); // a step whose root never came
    Thread::Step& step = thread.m_steps.emplace_back();
    step.task = index;
    step.base = thread.m_frames.size();
    step.to_resume = thrown != 0 ? 1 : resumed;
    step.begin = ts;
}

void StackModel::keep_outer(TaskState& state, std::uint32_t resumed)
{
    // The step's root is the chain's `resumed`-th frame; those past it had returned for good.
    const std::size_t chain = std::min<std::size_t>(resumed, state.suspended.size() - state.next);
    if (chain == 0)
        return;
    const auto root = state.suspended.begin() + static_cast<std::ptrdiff_t>(state.next + chain - 1);
    for (auto frame = root + 1; frame != state.suspended.end(); ++frame)
        end_call(*state.thread, *frame);
    state.outer.assign(state.suspended.begin() + static_cast<std::ptrdiff_t>(state.next), root);
    state.suspended.assign(root, root + 1);
    state.next = 0;
}

void StackModel::restore_outer(TaskState& state)
{
    if (state.outer.empty())
        return;
    state.suspended.erase(state.suspended.begin(),
                          state.suspended.begin() + static_cast<std::ptrdiff_t>(state.next));
    state.suspended.insert(state.suspended.begin(), state.outer.begin(), state.outer.end());
    state.outer.clear();
    state.next = 0;
}

void StackModel::on_task_end(Thread& thread, std::uint64_t key, std::uint8_t state)
{
    const std::uint32_t index = task_of(thread.m_key.pid, key);
    if (index == no_task || m_tasks[index].ended != TaskEnd::open)
        return; // a task whose start the trace lacks, or told twice
    restore_outer(m_task_states[index]);
    end_suspended(index);
    Task& task = m_tasks[index];
    task.ended = state == 0 ? TaskEnd::returned : state == 2 ? TaskEnd::cancelled : TaskEnd::raised;
    // It ended with its last step (python:task_end follows the root's return).
    TaskState& suspended = m_task_states[index];
    task.end = suspended.is_suspended ? suspended.suspended_at : thread.m_last_ts;
    suspended.is_suspended = false;
}

void StackModel::on_hidden_call(Thread& thread, std::uint64_t code_id)
{
    if (thread.m_steps.empty())
        return;
    end_returned(thread);
    Thread::Step& step = thread.m_steps.back();
    if (step.to_resume > 0 && --step.to_resume == 0)
        end_suspended(step.task);
    if (!step.is_root_pending && step.base < thread.m_frames.size()) {
        const Frame& root = thread.m_frames[step.base];
        if (!root.id.is_c && root.id.value == current_id(code_id))
            ++step.hidden_root_calls;
    }
}

bool StackModel::is_task_root_return(Thread& thread, std::uint64_t code_id) const noexcept
{
    if (thread.m_steps.empty())
        return false;
    Thread::Step& step = thread.m_steps.back();
    if (step.is_root_pending || step.base >= thread.m_frames.size())
        return false;
    const Frame& root = thread.m_frames[step.base];
    if (root.id.is_c || root.id.value != current_id(code_id))
        return false;
    if (step.hidden_root_calls > 0) {
        --step.hidden_root_calls;
        return false;
    }
    return true;
}

void StackModel::join_task(Thread& thread, Frame& frame)
{
    end_returned(thread);
    // The innermost step whose root runs (a step whose root has not come yet has no frame: what
    // comes before it, against the hook's order, is the enclosing step's).
    auto step = thread.m_steps.rbegin();
    while (step != thread.m_steps.rend() && step->is_root_pending)
        ++step;
    if (step == thread.m_steps.rend())
        return;
    const bool is_child = !thread.m_frames.empty() && thread.m_frames.back().task == step->task;
    frame.task = step->task;
    frame.task_node = task_child(
        is_child ? thread.m_frames.back().task_node : m_tasks[step->task].root, frame.id);
}

bool StackModel::resume_call(Thread& thread, FrameId id)
{
    Thread::Step& step = thread.m_steps.back();
    if (!step.is_root_pending && step.to_resume == 0)
        return false;
    end_returned(thread);
    TaskState& state = m_task_states[step.task];
    bool is_resumed = false;
    if (step.to_resume > 0) {
        --step.to_resume;
        is_resumed = state.next < state.suspended.size() && state.suspended[state.next].id == id;
        if (!is_resumed)
            step.to_resume = 0; // not the frame it suspended: none of them resumes
    }
    const bool is_root = step.is_root_pending;
    if (!is_resumed && !is_root) {
        end_suspended(step.task);
        return false; // a new call
    }
    Frame frame;
    if (is_resumed) {
        frame = state.suspended[state.next++];
        frame.child_ns = 0;
        frame.line = 0;
    } else {
        frame.id = id;
        frame.task = step.task;
        frame.task_node = task_child(m_tasks[step.task].root, id);
    }
    frame.begin = thread.m_last_ts;
    frame.node =
        thread.child_node(thread.m_frames.empty() ? 0 : thread.m_frames.back().node, id, is_root);
    if (is_root)
        step.base = thread.m_frames.size(); // where it is (a C frame may have returned since)
    thread.m_frames.push_back(frame);
    ++thread.m_active[id];
    step.is_root_pending = false;
    if (step.to_resume == 0)
        end_suspended(step.task); // the others had returned for good
    return true;
}

void StackModel::end_returned(Thread& thread)
{
    for (const Frame& frame : thread.m_returned)
        end_call(thread, frame);
    thread.m_returned.clear();
}

void StackModel::end_suspended(std::uint32_t task)
{
    TaskState& state = m_task_states[task];
    for (std::size_t i = state.next; i < state.suspended.size(); ++i)
        end_call(*state.thread, state.suspended[i]);
    state.suspended.clear();
    state.next = 0;
}

void StackModel::end_steps(Thread& thread, Timestamp ts, bool is_trace_end)
{
    while (!thread.m_steps.empty()) {
        const Thread::Step& step = thread.m_steps.back();
        const std::size_t depth = thread.m_frames.size();
        if (!is_trace_end && (step.is_root_pending ? step.base <= depth : step.base < depth))
            return;
        if (step.is_root_pending)
            thread.m_steps.pop_back(); // the frame that was to call the root returned
        else
            end_step(thread, ts, !is_trace_end);
    }
}

void StackModel::end_step(Thread& thread, Timestamp ts, bool suspends)
{
    const Thread::Step step = thread.m_steps.back();
    thread.m_steps.pop_back();
    const Timestamp ran = clipped(step.begin, ts);
    m_tasks[step.task].running_ns += std::max<Timestamp>(0, ran - step.nested_ns);
    if (!thread.m_steps.empty())
        thread.m_steps.back().nested_ns += ran;
    // The cascade of returns that ended the step, innermost first: suspended, or not.
    TaskState& state = m_task_states[step.task];
    end_suspended(step.task);
    // After a thrown step, the frames outside its root are suspended still, outside those.
    state.suspended.assign(state.outer.begin(), state.outer.end());
    state.outer.clear();
    state.suspended.insert(state.suspended.end(), thread.m_returned.rbegin(),
                           thread.m_returned.rend());
    thread.m_returned.clear();
    state.thread = &thread;
    state.suspended_at = ts;
    state.is_suspended = suspends;
}

void StackModel::add_await(const Thread& thread, std::uint32_t task, AwaitKind kind,
                           Timestamp begin, Timestamp end)
{
    const auto slot = static_cast<std::size_t>(kind);
    m_tasks[task].await_ns[slot] += clipped(begin, end);
    ++m_tasks[task].awaits[slot];
    if (m_listener && begin <= m_end && end >= m_begin)
        m_listener->on_await(thread, task, kind, clip_begin(begin), clip_end(end));
}

void StackModel::finish_tasks()
{
    for (std::uint32_t index = 0; index < m_tasks.size(); ++index) {
        Task& task = m_tasks[index];
        TaskState& state = m_task_states[index];
        const auto it = m_threads.find(task.thread);
        if (task.ended == TaskEnd::open && it != m_threads.end()) {
            task.end = std::max(task.created, it->second->m_last_ts);
            if (state.is_suspended && state.thread)
                add_await(*state.thread, index, AwaitKind::unknown, state.suspended_at,
                          std::max(state.suspended_at, task.end));
            else if (task.steps == 0)
                task.scheduled_ns += clipped(task.created, task.end);
        }
        restore_outer(state);
        end_suspended(index);
        state.is_suspended = false;
        task.wall_ns = clipped(task.created, std::max(task.created, task.end));
    }
}

} // namespace pyust::analysis
