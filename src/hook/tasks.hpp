// asyncio tasks (issue 29; a prototype, STUDY-29.md has the plan): which task
// each coroutine frame runs for. A task's step resumes its coroutine from
// outside any coroutine (the C Task's step from Handle._run, the pure-Python
// one's from Task.__step, an eager task's first one from create_task); every
// frame until that coroutine's frame returns runs for the task. The back ends
// find such "root" frames and call enter_step() and leave_step() around them;
// the code objects that create tasks are marked at registration (role_of())
// and hand their result to on_factory_return(). A task is named by the address
// of its coroutine object, which the hook holds at every step without a
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
    factory, // returns a new task: BaseEventLoop.create_task, asyncio.create_task
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
// what it waited on) and makes it the calling thread's current task. noexcept.
Step enter_step(const void* coroutine) noexcept;

// A traced coroutine frame other than a root yielded (suspended) during the step: one more
// frame the task's next step resumes. noexcept.
inline void on_yield() noexcept;

// How a frame stopped running.
enum class End : std::uint8_t { yielded, returned, raised };

// The root frame of enter_step(coroutine) stopped: it yielded value (the task suspends on
// it), or returned or raised (python:task_end; raised: the exception is the current one).
// The step that step (enter_step()'s result) nests in is the thread's current one again.
// noexcept.
void leave_step(const Step& step, const void* coroutine, End end, PyObject* value) noexcept;

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
