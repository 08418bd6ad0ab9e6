// asyncio tasks (issue 29; a prototype, STUDY-29.md has the plan): which task
// each coroutine frame runs for. A task's step resumes its coroutine from
// outside any coroutine (the C Task's step from Handle._run, the pure-Python
// one's from Task.__step, an eager task's first one from create_task); every
// frame until that coroutine's frame returns runs for the task. The back ends
// find such "root" frames and call enter_step() and leave_step() around them;
// the code objects that create tasks are marked at registration (role_of())
// and hand their result to on_factory_return(). A task is named by the address
// of its coroutine object, which the hook holds at every step without a
// lookup. Every function requires the GIL and never raises into the program.
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

// A root coroutine frame of the coroutine object at coroutine starts or resumes: emits
// python:task_step and makes it the calling thread's current task. Returns the task that was
// current before, for leave_step(). noexcept.
std::uint64_t enter_step(const void* coroutine) noexcept;

// The root frame of enter_step() stopped running (it yielded, returned or raised): previous
// (enter_step()'s result) is the thread's current task again. noexcept.
void leave_step(std::uint64_t previous) noexcept;

// A factory (Role::factory) returned result: python:task for it, when it is a task (has
// get_coro()) not named already by an inner factory's return. noexcept.
void on_factory_return(PyObject* result) noexcept;

} // namespace pyust::hook::tasks
