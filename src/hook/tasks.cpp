// asyncio tasks (see tasks.hpp).
#include "hook/tasks.hpp"

#include <cstring>
#include <unordered_map>

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

// What a task's last suspension left for its next step (python:task_step's fields).
struct Suspension {
    std::uint32_t resumed = 0;
    std::uint8_t awaited = 0;
    std::uint64_t awaited_id = 0;
};

// awaited's values (python_tp.h).
enum Awaited : std::uint8_t { k_none, k_yield, k_future, k_task, k_gather };

// The suspended tasks, by key (the GIL serialises them; never destroyed: threads may step
// during static destruction). A task's entry goes at its task_end.
std::unordered_map<std::uint64_t, Suspension>& s_suspended =
    *new std::unordered_map<std::uint64_t, Suspension>;

// asyncio's Task types (the C one and the pure-Python one) and CancelledError, read from
// asyncio.tasks and asyncio.exceptions once they are imported (strong references).
struct AsyncioTypes {
    PyObject* task = nullptr;
    PyObject* py_task = nullptr;
    PyObject* cancelled = nullptr;
    PyObject* current_task = nullptr;
    bool is_read = false;
};
AsyncioTypes s_types;

const AsyncioTypes& asyncio_types() noexcept
{
    if (s_types.is_read)
        return s_types;
    compat::SavedError saved;
    // The submodules themselves (PyImport_ImportModuleLevel would give the package, which
    // does not export _PyTask).
    PyObject* tasks = PyImport_ImportModule("asyncio.tasks");
    PyObject* exceptions = PyImport_ImportModule("asyncio.exceptions");
    if (tasks != nullptr && exceptions != nullptr) {
        s_types.task = PyObject_GetAttrString(tasks, "Task");
        s_types.py_task = PyObject_GetAttrString(tasks, "_PyTask");
        s_types.cancelled = PyObject_GetAttrString(exceptions, "CancelledError");
        s_types.current_task = PyObject_GetAttrString(tasks, "current_task");
        s_types.is_read = true;
    }
    Py_XDECREF(tasks);
    Py_XDECREF(exceptions);
    PyErr_Clear();
    return s_types;
}

bool is_instance_of(PyObject* value, PyObject* type) noexcept
{
    return type != nullptr && PyType_Check(type) &&
           PyObject_TypeCheck(value, reinterpret_cast<PyTypeObject*>(type));
}

// What a root frame's yielded value says the task waits on (python:task_step's awaited and
// awaited_id): None a bare yield, a Task (its key: its coroutine's address), gather's
// future (by its type's name), any other object a future.
Suspension awaited_of(PyObject* value) noexcept
{
    Suspension suspension;
    if (value == nullptr || value == Py_None) {
        suspension.awaited = k_yield;
        return suspension;
    }
    const AsyncioTypes& types = asyncio_types();
    if (is_instance_of(value, types.task) || is_instance_of(value, types.py_task)) {
        suspension.awaited = k_task;
        compat::SavedError saved;
        if (PyObject* coroutine = PyObject_CallMethod(value, "get_coro", nullptr)) {
            suspension.awaited_id = key_of(coroutine);
            Py_DECREF(coroutine);
        }
        PyErr_Clear();
        return suspension;
    }
    const char* type_name = Py_TYPE(value)->tp_name;
    const char* dot = std::strrchr(type_name, '.');
    suspension.awaited = std::strcmp(dot != nullptr ? dot + 1 : type_name, "_GatheringFuture") == 0
                             ? k_gather
                             : k_future;
    suspension.awaited_id = key_of(value);
    return suspension;
}

// Whether the exception a root frame raised (exception: nullptr when the back end does not
// have it) is asyncio's CancelledError. Without the exception (a profile function sees none),
// whether the current task is being cancelled (Task.cancelling(), 3.11+; 3.10: never).
bool is_cancelled(PyObject* exception) noexcept
{
    const AsyncioTypes& types = asyncio_types();
    if (types.cancelled == nullptr)
        return false;
    if (exception != nullptr)
        return PyObject_IsInstance(exception, types.cancelled) == 1;
    if (PyErr_Occurred() != nullptr)
        return PyErr_ExceptionMatches(types.cancelled) != 0;
    if (types.current_task == nullptr)
        return false;
    compat::SavedError saved;
    bool is_cancelling = false;
    if (PyObject* task = PyObject_CallNoArgs(types.current_task)) {
        if (PyObject* count = PyObject_CallMethod(task, "cancelling", nullptr)) {
            is_cancelling = PyLong_Check(count) && PyLong_AsLong(count) > 0;
            Py_DECREF(count);
        }
        Py_DECREF(task);
    }
    PyErr_Clear();
    return is_cancelling;
}

} // namespace

namespace detail {
thread_local std::uint32_t t_yields __attribute__((tls_model("initial-exec"))) = 0;
} // namespace detail

Role role_of(const std::string& module, const std::string& qualname) noexcept
{
    if (module == "asyncio.base_events" &&
        (qualname == "BaseEventLoop.create_task" || qualname == "create_task"))
        return Role::factory;
    if (module == "asyncio.tasks" && qualname == "create_task")
        return Role::factory;
    return Role::none;
}

Outer enter_step(const void* coroutine) noexcept
{
    const Outer outer{t_current, detail::t_yields};
    t_current = key_of(coroutine);
    detail::t_yields = 0;
    Suspension last;
    if (const auto found = s_suspended.find(t_current); found != s_suspended.end())
        last = found->second;
    s_state.emitter->task_step(t_current, last.resumed, last.awaited, last.awaited_id);
    return outer;
}

void leave_step(const Outer& outer, const void* coroutine, End end, PyObject* value) noexcept
{
    const std::uint64_t key = key_of(coroutine);
    if (end == End::yielded) {
        try {
            Suspension& suspension = s_suspended[key];
            suspension = awaited_of(value);
            suspension.resumed = detail::t_yields + 1; // and the root
        } catch (...) { // out of memory: the next step says it resumes nothing
        }
    } else {
        s_suspended.erase(key);
        s_state.emitter->task_end(key, end == End::raised ? (is_cancelled(value) ? 2 : 1) : 0);
    }
    t_current = outer.task;
    detail::t_yields = outer.yields;
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
