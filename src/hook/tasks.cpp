// asyncio tasks (see tasks.hpp).
#include "hook/tasks.hpp"

#include "hook/state.hpp"

namespace pyust::hook::tasks {

namespace {

// The key of the task whose step the thread runs (0: none): the parent of the tasks it
// creates. Saved and restored around each step, so an eager task's first step, which runs
// inside its creator's create_task, gives the creator back its key.
thread_local std::uint64_t t_current __attribute__((tls_model("initial-exec"))) = 0;

// The last task named on this thread and its name (a strong reference): asyncio.create_task
// returns the task that BaseEventLoop.create_task, inside it, returned (and named) already,
// and names it only then (3.10 to 3.13): named again only when its name changed.
thread_local std::uint64_t t_last_named __attribute__((tls_model("initial-exec"))) = 0;
thread_local PyObject* t_last_name __attribute__((tls_model("initial-exec"))) = nullptr;

std::uint64_t key_of(const void* coroutine) noexcept
{
    return reinterpret_cast<std::uintptr_t>(coroutine);
}

} // namespace

Role role_of(const std::string& module, const std::string& qualname) noexcept
{
    if (module == "asyncio.base_events" &&
        (qualname == "BaseEventLoop.create_task" || qualname == "create_task"))
        return Role::factory;
    if (module == "asyncio.tasks" && qualname == "create_task")
        return Role::factory;
    return Role::none;
}

std::uint64_t enter_step(const void* coroutine) noexcept
{
    const std::uint64_t previous = t_current;
    t_current = key_of(coroutine);
    s_state.emitter->task_step(t_current);
    return previous;
}

void leave_step(std::uint64_t previous) noexcept
{
    t_current = previous;
}

void on_factory_return(PyObject* result) noexcept
{
    if (!s_state.is_active || result == Py_None)
        return;
    compat::SavedError saved;
    PyObject* coroutine = PyObject_CallMethod(result, "get_coro", nullptr);
    PyObject* name =
        coroutine != nullptr ? PyObject_CallMethod(result, "get_name", nullptr) : nullptr;
    const std::uint64_t key = coroutine != nullptr ? key_of(coroutine) : 0;
    const char* text = name != nullptr && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "?";
    const bool is_named = key == t_last_named && name != nullptr && t_last_name != nullptr &&
                          PyObject_RichCompareBool(name, t_last_name, Py_EQ) == 1;
    if (key != 0 && !is_named) {
        s_state.emitter->task(key, t_current, text != nullptr ? text : "?");
        t_last_named = key;
        Py_XINCREF(name);
        Py_XSETREF(t_last_name, name);
    }
    Py_XDECREF(name);
    Py_XDECREF(coroutine);
    PyErr_Clear();
}

} // namespace pyust::hook::tasks
