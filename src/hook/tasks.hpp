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
//
// An exception thrown into a suspended task (a cancellation, a timeout, a failed future it
// awaited) resumes its await chain innermost first: CPython links the chain's frames, the
// root's outermost, above the step runner's, and resumes the innermost coroutine's frame, then
// each frame it unwinds into. Such a frame, a coroutine's resumed by a coroutine's while the
// thread runs no step, is an "inner root": its step is its task's (python:task_step's
// thrown), and it is recorded as the module filter says. And a task that asyncio.Task(coro,
// eager_start=True) starts in a coroutine's step (3.12+) runs its first step at once, its frame
// called by that coroutine's: once the loop's is_running() (Role::eager_probe), which the C
// Task asks first, answered True, the next coroutine to start is compared with
// asyncio.current_task()'s.
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
    // Returns a task it may not have made (asyncio.ensure_future, gather's, and up to 3.11 the
    // _ensure_future it calls): named there when nothing named it yet, as the task of a loop
    // whose create_task is no Python code (uvloop's).
    adopter,
    // Runs a task's step (Handle._run, the pure-Python Task's __step), where a profile function
    // (3.10, 3.11), which does not see a root's exception, learns how a task ended.
    step_runner,
    // BaseEventLoop.is_running, which the C Task's constructor asks just before it runs an
    // eager first step (3.12+: asyncio.Task(coro, eager_start=True)): from a coroutine's frame,
    // as aiohttp does, the new coroutine's frame is then resumed by a coroutine's.
    eager_probe,
};

// The role of the code named module:qualname (qualname is co_name before 3.11). noexcept.
Role role_of(const std::string& module, const std::string& qualname) noexcept;

struct Suspension;

// What enter_step() hands to leave_step(): the step it nests in (an eager task's first step runs
// inside its creator's), where the task's suspension is kept (null: out of memory), whether the
// root is an inner one (and then whether it is traced). Trivial (no member initialisers), so
// that the back ends' thread-local arrays of open roots need no per-thread construction, which
// a thread-local reaches through __tls_get_addr.
struct Step {
    std::uint64_t outer_task;
    std::uint32_t outer_yields;
    Suspension* suspension;
    bool is_inner;
    bool is_traced;
};

// Whether the back end records the call and the return of the root of step, whose code's
// traced verdict is is_traced: a task's root always, an inner root as the filter says.
inline bool records_root(const Step& step, bool is_traced) noexcept
{
    return !step.is_inner || is_traced;
}

// Whether the calling thread runs no task's step: a coroutine's frame resumed by a coroutine's
// then may be an inner root. noexcept.
inline bool is_between_steps() noexcept;

// Whether root is the coroutine of a task's root frame, of a task started and not ended (the
// outermost of the frames an inner root's resumption linked). noexcept.
bool is_task(const void* root) noexcept;

// A root coroutine frame of the coroutine object at coroutine starts or resumes (is_traced:
// its code's traced verdict; task_root: for an inner root, its task's root coroutine, for
// which is_task(), else nullptr): emits python:task_step (with what the task's last suspension
// left: how many frames it resumes, what it waited on), after python:task on a first step that
// no factory named, and makes it the calling thread's current task. noexcept.
Step enter_step(const void* coroutine, bool is_traced, const void* task_root = nullptr) noexcept;

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

// An eager probe (Role::eager_probe) returned result: when it is True, the next coroutine's
// frame to start may be an eager task's first step (is_eager_start()). noexcept.
inline void on_probe_return(PyObject* result) noexcept;

// Whether the calling thread's last eager probe answered True and no coroutine's frame started
// since. noexcept.
inline bool has_eager_hint() noexcept;

// Whether the coroutine, whose frame starts or resumes called by a coroutine's (not a root, by
// the caller's test), starts an eager task's first step: it is the current task's coroutine.
// Called when has_eager_hint(), which it clears. noexcept.
bool is_eager_start(const void* coroutine) noexcept;

// A factory (Role::factory; is_adopter: Role::adopter) returned result: python:task for it,
// when it is a task (has get_coro()) not named already by an inner factory's return (an
// adopter's: not named at all yet). noexcept.
void on_factory_return(PyObject* result, bool is_adopter) noexcept;

namespace detail {
// The key of the task whose step the thread runs (0: none): the parent of the tasks it
// creates. Saved and restored around each step, so an eager task's first step, which runs
// inside its creator's create_task, gives the creator back its key.
inline thread_local std::uint64_t t_current __attribute__((tls_model("initial-exec"))) = 0;
// on_probe_return()'s hint.
inline thread_local bool t_eager_hint __attribute__((tls_model("initial-exec"))) = false;
// Frames that yielded during the thread's current step (on_yield()). Defined here, constant
// initialised: a thread-local defined in another file is reached through a wrapper function.
inline thread_local std::uint32_t t_yields __attribute__((tls_model("initial-exec"))) = 0;
} // namespace detail

inline void on_probe_return(PyObject* result) noexcept
{
    detail::t_eager_hint = result == Py_True;
}

inline bool has_eager_hint() noexcept
{
    return detail::t_eager_hint;
}

inline bool is_between_steps() noexcept
{
    return detail::t_current == 0;
}

inline void on_yield() noexcept
{
    ++detail::t_yields;
}

} // namespace pyust::hook::tasks
