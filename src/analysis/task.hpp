// asyncio's tasks as the stack model knows them (python:task, python:task_step, python:task_end;
// see StackModel in stack_model.hpp, which keeps them): what a task awaited, how it ended, and
// its figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/thread_key.hpp"

namespace pyust::analysis {

// No task: Frame::task of a frame that runs for none, Task::creator of a task created outside any.
inline constexpr std::uint32_t no_task = UINT32_MAX;

// What an asyncio task awaited between two steps: python:task_step's `awaited` (a bare yield,
// a future, a task, gather's future), a future told apart as asyncio.sleep() when the
// innermost frame that the next step resumes is asyncio.tasks:sleep; unknown for a task still
// suspended when the trace ends.
enum class AwaitKind : std::uint8_t { yield, sleep, future, task, gather, unknown };
inline constexpr std::size_t await_kinds = 6;

// "yield", "sleep", "future", "task", "gather", "unknown". noexcept.
const char* await_kind_name(AwaitKind kind) noexcept;

// How a task's coroutine ended (python:task_end's state), or open: no end in the trace.
enum class TaskEnd : std::uint8_t { returned, raised, cancelled, open };

// "returned", "raised", "cancelled", "not ended". noexcept.
const char* task_end_name(TaskEnd end) noexcept;

// An asyncio task, from python:task, python:task_step and python:task_end. Its frames are in
// the tasks' tree (StackModel::task_nodes()) under its node `root`: what it called, nested as
// its coroutines await each other, each resumption of a coroutine part of the same call.
// Times are clipped to the window; wall = scheduled + running + awaiting (the sum of awaits).
struct Task {
    std::uint64_t key = 0; // python:task's key (its coroutine's address, reused once it ended)
    std::string name;      // printable; empty when no python:task named it (a bare coroutine)
    ThreadKey thread;      // the thread of its first event (its event loop's: it runs there)
    std::uint32_t creator = no_task;
    // Where it was created: a node of task_nodes() (its creator's frames, or the creator's root
    // node), or, created outside any task, a node of its thread's nodes() (0: at the top of
    // its stack).
    bool is_created_in_task = false;
    std::uint32_t created_at = 0;
    std::uint32_t root = 0; // its node in task_nodes()
    Timestamp created = 0;  // its first event
    Timestamp end = 0;      // its python:task_end, or the last event of its thread
    Timestamp wall_ns = 0;  // from created to end
    TaskEnd ended = TaskEnd::open;
    Timestamp scheduled_ns = 0; // from its creation to its first step
    Timestamp running_ns = 0;   // its steps, less the steps of other tasks run inside them
    std::uint64_t steps = 0;
    Timestamp await_ns[await_kinds] = {}; // per AwaitKind
    std::uint64_t awaits[await_kinds] = {};
    std::vector<std::uint32_t> awaited_tasks; // the tasks it awaited (AwaitKind::task), once each

    Timestamp awaiting_ns() const noexcept
    {
        Timestamp sum = 0;
        for (const Timestamp ns : await_ns)
            sum += ns;
        return sum;
    }
};

} // namespace pyust::analysis
