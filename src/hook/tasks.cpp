// asyncio tasks (see tasks.hpp).
#include "hook/tasks.hpp"

#include <unordered_map>

#include "hook/state.hpp"

namespace pyust::hook::tasks {

// What a task's last suspension left for its next step (python:task_step's fields).
struct Suspension {
    std::uint32_t resumed = 0;
    std::uint8_t awaited = 0;
    std::uint64_t awaited_id = 0;
};

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

// awaited's values (python_tp.h).
enum Awaited : std::uint8_t { k_none, k_yield, k_future, k_task, k_gather };

// The suspended tasks, by key (the GIL serialises them; never destroyed: threads may step
// during static destruction). A task's entry is made at its first step and goes at its
// task_end; the table's entries stay where they are while others come and go, so that a step
// looks its task up once (Step::suspension).
std::unordered_map<std::uint64_t, Suspension>& s_suspended =
    *new std::unordered_map<std::uint64_t, Suspension>;

// What asyncio's tasks are made of, read from asyncio.tasks and asyncio.exceptions once (which
// it imports; strong references): the Task types (the C one and the pure-Python one), Future (the
// C one) and gather's, CancelledError, current_task(), and the names of the methods the hook
// calls (interned).
struct Asyncio {
    PyObject* task = nullptr;
    PyObject* py_task = nullptr;
    PyObject* future = nullptr;
    PyObject* gathering_future = nullptr;
    PyObject* cancelled = nullptr;
    PyObject* current_task = nullptr;
    PyObject* get_coro = nullptr;
    PyObject* get_name = nullptr;
    PyObject* cancelling = nullptr;
    bool is_read = false;
};
Asyncio s_asyncio;

const Asyncio& asyncio() noexcept
{
    if (s_asyncio.is_read)
        return s_asyncio;
    compat::SavedError saved;
    // The submodules themselves (PyImport_ImportModuleLevel would give the package, which
    // exports neither _PyTask nor _GatheringFuture).
    PyObject* tasks = PyImport_ImportModule("asyncio.tasks");
    PyObject* exceptions = PyImport_ImportModule("asyncio.exceptions");
    if (tasks != nullptr && exceptions != nullptr) {
        s_asyncio.task = PyObject_GetAttrString(tasks, "Task");
        s_asyncio.py_task = PyObject_GetAttrString(tasks, "_PyTask");
        if (PyObject* futures = PyObject_GetAttrString(tasks, "futures")) {
            s_asyncio.future = PyObject_GetAttrString(futures, "Future");
            Py_DECREF(futures);
        }
        s_asyncio.gathering_future = PyObject_GetAttrString(tasks, "_GatheringFuture");
        s_asyncio.cancelled = PyObject_GetAttrString(exceptions, "CancelledError");
        s_asyncio.current_task = PyObject_GetAttrString(tasks, "current_task");
        s_asyncio.get_coro = PyUnicode_InternFromString("get_coro");
        s_asyncio.get_name = PyUnicode_InternFromString("get_name");
        s_asyncio.cancelling = PyUnicode_InternFromString("cancelling");
        s_asyncio.is_read = true;
    }
    Py_XDECREF(tasks);
    Py_XDECREF(exceptions);
    PyErr_Clear();
    return s_asyncio;
}

// object.name() (a new reference), or nullptr with no error set. Precondition: the current
// error is saved.
PyObject* call_method(PyObject* object, PyObject* name) noexcept
{
    PyObject* result = name != nullptr ? PyObject_CallMethodNoArgs(object, name) : nullptr;
    if (result == nullptr)
        PyErr_Clear();
    return result;
}

bool is_instance_of(PyObject* value, PyObject* type) noexcept
{
    return type != nullptr && PyType_Check(type) &&
           PyObject_TypeCheck(value, reinterpret_cast<PyTypeObject*>(type));
}

// What a root frame's yielded value says the task waits on (python:task_step's awaited and
// awaited_id): None a bare yield, a Task (its key: its coroutine's address), gather's
// future, any other object a future. The exact types come first: they are what asyncio
// yields.
Suspension awaited_of(PyObject* value) noexcept
{
    Suspension suspension;
    if (value == nullptr || value == Py_None) {
        suspension.awaited = k_yield;
        return suspension;
    }
    const Asyncio& types = asyncio();
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value));
    if (type == types.future) {
        suspension.awaited = k_future;
        suspension.awaited_id = key_of(value);
        return suspension;
    }
    const bool is_task = type == types.task || type == types.py_task ||
                         (type != types.gathering_future && (is_instance_of(value, types.task) ||
                                                             is_instance_of(value, types.py_task)));
    if (is_task) {
        suspension.awaited = k_task;
        compat::SavedError saved;
        if (PyObject* coroutine = call_method(value, types.get_coro)) {
            suspension.awaited_id = key_of(coroutine);
            Py_DECREF(coroutine);
        }
        return suspension;
    }
    suspension.awaited =
        type == types.gathering_future || is_instance_of(value, types.gathering_future) ? k_gather
                                                                                        : k_future;
    suspension.awaited_id = key_of(value);
    return suspension;
}

// Whether the exception a root frame raised (exception: nullptr when the back end does not
// have it) is asyncio's CancelledError. Without the exception (a profile function sees none),
// whether the current task is being cancelled (Task.cancelling(), 3.11+; 3.10: never).
bool is_cancelled(PyObject* exception) noexcept
{
    const Asyncio& types = asyncio();
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
        if (PyObject* count = call_method(task, types.cancelling)) {
            is_cancelling = PyLong_Check(count) && PyLong_AsLong(count) > 0;
            Py_DECREF(count);
        }
        Py_DECREF(task);
    }
    PyErr_Clear();
    return is_cancelling;
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

Step enter_step(const void* coroutine) noexcept
{
    Step step{t_current, detail::t_yields, nullptr};
    t_current = key_of(coroutine);
    detail::t_yields = 0;
    try {
        step.suspension = &s_suspended.try_emplace(t_current).first->second;
    } catch (...) { // out of memory: the next step says it resumes nothing
    }
    const Suspension last = step.suspension != nullptr ? *step.suspension : Suspension{};
    s_state.emitter->task_step(t_current, last.resumed, last.awaited, last.awaited_id);
    return step;
}

void leave_step(const Step& step, const void* coroutine, End end, PyObject* value) noexcept
{
    if (end == End::yielded) {
        if (step.suspension != nullptr) {
            *step.suspension = awaited_of(value);
            step.suspension->resumed = detail::t_yields + 1; // and the root
        }
    } else {
        const std::uint64_t key = key_of(coroutine);
        s_suspended.erase(key);
        s_state.emitter->task_end(key, end == End::raised ? (is_cancelled(value) ? 2 : 1) : 0);
    }
    t_current = step.outer_task;
    detail::t_yields = step.outer_yields;
}

void on_factory_return(PyObject* result) noexcept
{
    if (!s_state.is_active || result == Py_None)
        return;
    compat::SavedError saved;
    const Asyncio& methods = asyncio();
    PyObject* coroutine = call_method(result, methods.get_coro);
    PyObject* name = coroutine != nullptr ? call_method(result, methods.get_name) : nullptr;
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
