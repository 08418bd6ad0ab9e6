// asyncio tasks (issue 29): which task each coroutine frame runs for. A task's step resumes its
// coroutine from outside any coroutine (the C Task's step from Handle._run, the pure-Python one's
// from Task.__step, an eager task's first one from create_task); every frame until that coroutine's
// frame returns runs for the task. The back ends find such "root" frames and call enter_step() and
// leave_step() around them; the code objects that create tasks are marked at registration
// (role_of()) and hand their result to on_factory_return(); a task that none of them made
// (asyncio.Task() called directly) is named at its first step, from asyncio.current_task(). A task
// is named by the address of its coroutine object, which the hook holds at every step without a
// lookup. A root frame's call and return are recorded whatever the module filter
// says (register_root()). Every function requires the GIL and never raises into
// the program.
#pragma once

#include <cstdint>
#include <string>

#include "hook/python_compat.hpp"

namespace pyust::hook::tasks {

// What a code object is to asyncio's tasks, decided once per code object.
enum class Role : std::uint8_t {
    none,
    factory, // returns a new task: BaseEventLoop.create_task, asyncio.create_task,
             // TaskGroup.create_task
    // Runs a task's step (Handle._run, the pure-Python Task's __step), where a profile function
    // (3.10, 3.11), which does not see a root's exception, learns how a task ended.
    step_runner,
};

// The role of the code named module:qualname (qualname is co_name before 3.11). noexcept.
Role role_of(const std::string& module, const std::string& qualname) noexcept;

struct Suspension;

// What enter_step() hands to leave_step(): the step it nests in (an eager task's first step runs
// inside its creator's), and where the task's suspension is kept (null: out of memory). Trivial
// (no member initialisers), so that the back ends' thread-local arrays of open roots need no
// per-thread construction, which a thread-local reaches through __tls_get_addr.
struct Step {
    std::uint64_t outer_task;
    std::uint32_t outer_yields;
    Suspension* suspension;
};

// A root coroutine frame of the coroutine object at coroutine starts or resumes: emits
// python:task_step (with what the task's last suspension left: how many frames it resumes,
// what it waited on), after python:task on a first step that no factory named, and makes it
// the calling thread's current task. noexcept.
Step enter_step(const void* coroutine) noexcept;

// A traced coroutine frame other than a root yielded (suspended) during the step: one more
// frame the task's next step resumes. noexcept.
inline void on_yield() noexcept;

// Whether value, which an async generator's frame yielded, is an item of the generator (its
// `yield`, which the `async for` consuming it goes on with), rather than what an await in the
// generator's body suspends the task on (the generator's frame is then part of the task's
// await chain, which the next step resumes). noexcept.
bool is_async_yield(PyObject* value) noexcept;

// How a frame stopped running.
enum class End : std::uint8_t { yielded, returned, raised };

// The root frame of enter_step(coroutine) stopped: it yielded value (the task suspends on
// it), or returned or raised (python:task_end; raised: value is the exception, else the current
// one). The step that step (enter_step()'s result) nests in is the thread's current one again. When
// it raised an exception the back end cannot see, runner (the frame of the step runner that called
// the root, or nullptr) defers python:task_end to on_runner_return(runner), where the task's state
// says whether it was cancelled. noexcept.
void leave_step(const Step& step, const void* coroutine, End end, PyObject* value,
                const void* runner = nullptr) noexcept;

// The frame of a step runner (Role::step_runner) returns: python:task_end of a task whose end
// leave_step() deferred to it. noexcept.
void on_runner_return(const void* frame) noexcept;

// A factory (Role::factory) returned result: python:task for it, when it is a task (has
// get_coro()) not named already by an inner factory's return. noexcept.
void on_factory_return(PyObject* result) noexcept;

namespace detail {
// Frames that yielded during the thread's current step (on_yield()). Defined here, constant
// initialised: a thread-local defined in another file is reached through a wrapper function.
inline thread_local std::uint32_t t_yields __attribute__((tls_model("initial-exec"))) = 0;
} // namespace detail

inline void on_yield() noexcept
{
    ++detail::t_yields;
}

} // namespace pyust::hook::tasks
