// asyncio tasks (see tasks.hpp).
#include "hook/tasks.hpp"

#include <cstring>
#include <functional>
#include <memory>
#include <new>
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

using detail::t_current;

// The last task named on this thread and its name (a strong reference): asyncio.create_task
// returns the task that BaseEventLoop.create_task, inside it, returned (and named) already,
// and names it only then (3.10 to 3.13): named again only when its name changed.
thread_local std::uint64_t t_last_named __attribute__((tls_model("initial-exec"))) = 0;
thread_local PyObject* t_last_name __attribute__((tls_model("initial-exec"))) = nullptr;

// Identities only, never dereferenced: the task this thread named (or found named) last, and
// the last task whose first step named it (an eager task's runs before its factory returns).
thread_local const PyObject* t_last_task __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local const PyObject* t_first_stepped __attribute__((tls_model("initial-exec"))) = nullptr;

// The task whose inner root ended (raised or returned) the thread's last step: the exception
// (or value) goes on out of it, and the next root is the frame just outside. 0: none. Whether
// a step of that cascade was told (python:task_step's thrown 2 for the next, else 1): an inner
// root that the module filter leaves out has no python:task_step, as it has no python:call.
thread_local std::uint64_t t_unwinding __attribute__((tls_model("initial-exec"))) = 0;
thread_local bool t_is_cascade_told __attribute__((tls_model("initial-exec"))) = false;

std::uint64_t key_of(const void* coroutine) noexcept
{
    return reinterpret_cast<std::uintptr_t>(coroutine);
}

// awaited's values (python_tp.h).
enum Awaited : std::uint8_t { k_none, k_yield, k_future, k_task, k_gather };

// The tasks known on any thread, by key (the GIL serialises them; never destroyed: threads may
// step during static destruction): each with what its last suspension left, and whether it
// stepped yet. A task's entry is made when python:task names it (before its first step, when a
// factory made it) or at its first step, and goes at its python:task_end; the table's entries
// stay where they are while others come and go, so that a step looks its task up once
// (Step::suspension).
struct Known {
    Suspension suspension;
    bool has_stepped = false;
};

// The table's allocator: an entry's node comes from, and goes back to, a list of the nodes of
// ended tasks (a program of many short tasks makes and ends one a task: malloc and free were
// some 5% of the task events' instructions on W4, 3.13), its buckets from the heap. Never
// returned: the list holds as many nodes as tasks were alive at once. The GIL serialises it.
template <typename T> struct NodePool {
    using value_type = T;
    NodePool() noexcept = default;
    template <typename U> NodePool(const NodePool<U>&) noexcept {}
    T* allocate(std::size_t count)
    {
        if (count != 1 || s_free == nullptr)
            return std::allocator<T>().allocate(count);
        Free* node = s_free;
        s_free = node->next;
        return reinterpret_cast<T*>(node);
    }
    void deallocate(T* pointer, std::size_t count) noexcept
    {
        if (count != 1) {
            std::allocator<T>().deallocate(pointer, count);
            return;
        }
        static_assert(sizeof(T) >= sizeof(void*) && alignof(T) >= alignof(void*));
        s_free = new (pointer) Free{s_free};
    }
    template <typename U> bool operator==(const NodePool<U>&) const noexcept { return true; }
    template <typename U> bool operator!=(const NodePool<U>&) const noexcept { return false; }

private:
    struct Free {
        Free* next;
    };
    static inline Free* s_free = nullptr; // a list per T: each of T's size
};

using Table =
    std::unordered_map<std::uint64_t, Known, std::hash<std::uint64_t>, std::equal_to<std::uint64_t>,
                       NodePool<std::pair<const std::uint64_t, Known>>>;
Table& s_tasks = *new Table;

// What asyncio's tasks are made of, read from asyncio.tasks and asyncio.exceptions once they are
// imported (strong references): the Task types (the C one and the pure-Python one), Future (the
// C one) and gather's, CancelledError, current_task(), the names of the methods the hook
// calls (interned), and the C Task's own get_coro and get_name (its type's, which no program can
// replace).
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
    PyObject* is_cancelled = nullptr;
    PyObject* done = nullptr;
    PyObject* task_get_coro = nullptr;
    PyObject* task_get_name = nullptr;
    bool is_read = false;
};
Asyncio s_asyncio;

// The module that sys.modules holds under name (a new reference), else nullptr.
PyObject* imported(const char* name) noexcept
{
    PyObject* key = PyUnicode_FromString(name);
    PyObject* module = key != nullptr ? PyImport_GetModule(key) : nullptr;
    Py_XDECREF(key);
    return module;
}

const Asyncio& asyncio() noexcept
{
    if (s_asyncio.is_read)
        return s_asyncio;
    // Looked up, never imported: a program that has not imported asyncio has no asyncio task
    // (a coroutine it drives by hand has steps, see enter_step()), and importing it from a
    // hook would run asyncio's import in the middle of the program's code. The submodules
    // themselves: the package exports neither _PyTask nor _GatheringFuture.
    compat::SavedError saved;
    PyObject* tasks = imported("asyncio.tasks");
    PyObject* exceptions = imported("asyncio.exceptions");
    if (tasks != nullptr && exceptions != nullptr) {
        Asyncio read;
        read.task = PyObject_GetAttrString(tasks, "Task");
        read.py_task = PyObject_GetAttrString(tasks, "_PyTask");
        if (PyObject* futures = PyObject_GetAttrString(tasks, "futures")) {
            read.future = PyObject_GetAttrString(futures, "Future");
            Py_DECREF(futures);
        }
        read.gathering_future = PyObject_GetAttrString(tasks, "_GatheringFuture");
        read.cancelled = PyObject_GetAttrString(exceptions, "CancelledError");
        read.current_task = PyObject_GetAttrString(tasks, "current_task");
        // Modules still being imported lack their names yet: read them again later.
        read.is_read =
            read.task != nullptr && read.cancelled != nullptr && read.current_task != nullptr;
        if (read.is_read) {
            read.get_coro = PyUnicode_InternFromString("get_coro");
            read.get_name = PyUnicode_InternFromString("get_name");
            read.cancelling = PyUnicode_InternFromString("cancelling");
            read.is_cancelled = PyUnicode_InternFromString("cancelled");
            read.done = PyUnicode_InternFromString("done");
            read.task_get_coro = PyObject_GetAttr(read.task, read.get_coro);
            read.task_get_name = PyObject_GetAttr(read.task, read.get_name);
            s_asyncio = read;
        } else {
            for (PyObject* object : {read.task, read.py_task, read.future, read.gathering_future,
                                     read.cancelled, read.current_task})
                Py_XDECREF(object);
        }
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

// Whether task is an instance of the C Task itself, not of a subclass.
bool is_c_task(PyObject* task) noexcept
{
    return reinterpret_cast<PyObject*>(Py_TYPE(task)) == asyncio().task;
}

// task.name() for a task's method (method: the C Task's own, called directly on an instance of
// that exact type, whose attribute lookup costs as much as the call), as call_method() has it.
PyObject* call_task_method(PyObject* task, PyObject* name, PyObject* method) noexcept
{
    if (method == nullptr || !is_c_task(task))
        return call_method(task, name);
    PyObject* result = PyObject_CallOneArg(method, task);
    if (result == nullptr)
        PyErr_Clear();
    return result;
}

// A field of the C Task's instances that one of its methods answers with (get_coro(): the
// coroutine; get_name(): the name, which 3.12+ keep as a number until asked), read in place
// once its place is known, instead of the call (some 100 instructions; with the formatting of a
// name, 700). The C type's layout is private, and differs between versions: the place is the one
// word of an instance that held the method's answer after the call, on one task, and held it
// again on another (learn()). Until then, and for good when a task contradicts it, the method;
// and for a name kept as a number, until get_name() said once what the number stands for.
class TaskField {
public:
    // The field's value in task, a C Task (borrowed; may be null), when its place is known.
    PyObject** find(PyObject* task) const noexcept
    {
        return m_state == State::known ? word(task) : nullptr;
    }
    // The method answered answer (not null) for task, a C Task: the place of the field.
    void learn(PyObject* task, PyObject* answer) noexcept
    {
        if (m_state == State::unknown) {
            // Words after the object's head: its type's fields, within its basic size.
            auto* words = reinterpret_cast<PyObject**>(task);
            const std::size_t count = Py_TYPE(task)->tp_basicsize / sizeof(PyObject*);
            std::size_t found = 0;
            for (std::size_t at = sizeof(PyObject) / sizeof(PyObject*); at < count; ++at) {
                if (words[at] == answer) {
                    m_offset = at;
                    ++found;
                }
            }
            m_state = found == 1 ? State::placed : State::none;
        } else if (m_state == State::placed) {
            m_state = *word(task) == answer ? State::known : State::none;
        }
    }

private:
    enum class State : std::uint8_t { unknown, placed, known, none };
    PyObject** word(PyObject* task) const noexcept
    {
        return reinterpret_cast<PyObject**>(task) + m_offset;
    }
    std::size_t m_offset = 0;
    State m_state = State::unknown;
};
TaskField s_coroutine_field;
TaskField s_name_field;
// Whether a C Task's name field holding an int n stands for the name "Task-n" (3.12+ format it
// at the first get_name()): what get_name() said of the first such field.
enum class Numbered : std::uint8_t { unknown, yes, no };
Numbered s_numbered = Numbered::unknown;

PyObject* coroutine_of(PyObject* task) noexcept
{
    const Asyncio& types = asyncio();
    if (!is_c_task(task))
        return call_method(task, types.get_coro);
    // A done task's field may be empty (3.12+ let its coroutine go), where get_coro() says None
    // (3.13) or crashes (3.12.0, 3.12.1).
    if (PyObject** field = s_coroutine_field.find(task))
        return Py_NewRef(*field != nullptr ? *field : Py_None);
    PyObject* coroutine = call_task_method(task, types.get_coro, types.task_get_coro);
    if (coroutine != nullptr && coroutine != Py_None)
        s_coroutine_field.learn(task, coroutine);
    return coroutine;
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
        if (PyObject* coroutine = coroutine_of(value)) {
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

// A task whose root frame raised an exception the back end did not see (a profile function's
// return event has none): its python:task_end waits for the return of the step runner's frame,
// when the task's own state tells a cancellation from an error. Steps do not nest where this
// happens (3.10, 3.11: no eager tasks), so a thread has one at a time.
struct DeferredEnd {
    std::uint64_t key = 0;
    PyObject* task = nullptr; // strong
    const void* runner = nullptr;
};
thread_local DeferredEnd t_deferred __attribute__((tls_model("initial-exec")));

void end_deferred() noexcept
{
    const DeferredEnd deferred = t_deferred;
    t_deferred = DeferredEnd{};
    if (deferred.task == nullptr)
        return;
    compat::SavedError saved;
    std::uint8_t state = 1;
    if (PyObject* cancelled = call_method(deferred.task, asyncio().is_cancelled)) {
        state = PyObject_IsTrue(cancelled) == 1 ? 2 : 1;
        Py_DECREF(cancelled);
    }
    PyErr_Clear();
    Py_DECREF(deferred.task);
    s_state.emitter->task_end(deferred.key, state);
}

// Defers the end of the current task (key) to runner's return; false when there is no current
// task to ask then.
bool defer_end(std::uint64_t key, const void* runner) noexcept
{
    const Asyncio& types = asyncio();
    if (types.current_task == nullptr)
        return false;
    end_deferred();
    compat::SavedError saved;
    PyObject* task = PyObject_CallNoArgs(types.current_task);
    PyErr_Clear();
    if (task == nullptr || task == Py_None) {
        Py_XDECREF(task);
        return false;
    }
    t_deferred = DeferredEnd{key, task, runner};
    return true;
}

// A task's name: the object it is (a strong reference; nullptr when it has none) and its text
// (valid while the object and the Name live).
struct Name {
    PyObject* object = nullptr;
    const char* utf8 = nullptr;
    char number[32] = ""; // "Task-n", for a name kept as the number n
    const char* text() const noexcept { return number[0] != '\0' ? number : utf8 ? utf8 : "?"; }
};

// "Task-n" into name.number, for the int n (a positive one: 3.12+ count tasks from 1).
void put_numbered(Name& name, PyObject* number) noexcept
{
    unsigned long long n = PyLong_AsUnsignedLongLong(number);
    if (n == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr) {
        PyErr_Clear();
        return;
    }
    char digits[20]; // snprintf's formatting would cost as much as the hook's work for a task
    int count = 0;
    do {
        digits[count++] = static_cast<char>('0' + n % 10);
        n /= 10;
    } while (n != 0);
    char* out = name.number;
    for (const char c : {'T', 'a', 's', 'k', '-'})
        *out++ = c;
    while (count > 0)
        *out++ = digits[--count];
    *out = '\0';
}

// task.get_name(), read in place from a C Task whose name field is known. Precondition: the
// current error is saved.
Name name_of(PyObject* task) noexcept
{
    Name name;
    const bool is_c = is_c_task(task);
    PyObject** field = is_c ? s_name_field.find(task) : nullptr;
    PyObject* held = field != nullptr ? *field : nullptr;
    if (held != nullptr &&
        (PyUnicode_CheckExact(held) || (s_numbered == Numbered::yes && PyLong_CheckExact(held)))) {
        name.object = Py_NewRef(held);
        if (PyLong_CheckExact(held))
            put_numbered(name, held);
        else
            name.utf8 = PyUnicode_AsUTF8(held);
        PyErr_Clear();
        return name;
    }
    // The first number in the field: does get_name() say the same? (It replaces the number.)
    Name numbered;
    if (held != nullptr && s_numbered == Numbered::unknown && PyLong_CheckExact(held))
        put_numbered(numbered, held);
    const Asyncio& methods = asyncio();
    name.object = call_task_method(task, methods.get_name, methods.task_get_name);
    if (name.object == nullptr || !PyUnicode_Check(name.object))
        return name;
    name.utf8 = PyUnicode_AsUTF8(name.object);
    PyErr_Clear();
    if (is_c && name.utf8 != nullptr) {
        if (numbered.number[0] != '\0')
            s_numbered =
                std::strcmp(numbered.number, name.utf8) == 0 ? Numbered::yes : Numbered::no;
        s_name_field.learn(task, name.object);
    }
    return name;
}

// python:task for task, whose coroutine's address is key, created in the step of parent (a
// key, 0 outside any task), unless it is the task this thread named last, under that name.
void name_task(PyObject* task, std::uint64_t key, std::uint64_t parent) noexcept
{
    Name name = name_of(task);
    const bool is_named = key == t_last_named && name.object != nullptr && t_last_name != nullptr &&
                          PyObject_RichCompareBool(name.object, t_last_name, Py_EQ) == 1;
    t_last_task = task;
    if (!is_named) {
        s_state.emitter->task(key, parent, name.text());
        t_last_named = key;
        Py_XINCREF(name.object);
        Py_XSETREF(t_last_name, name.object);
        try {
            s_tasks.try_emplace(key);
        } catch (...) { // out of memory: its first step names it again
        }
    }
    Py_XDECREF(name.object);
}

// The first step of the coroutine (the key's first since its task, if any, ended): python:task
// for the current task when it runs that coroutine and no create_task named it (asyncio.Task()
// constructed directly, as aiohttp does with eager_start on 3.12+), created by parent's step
// (the step an eager start nests in; 0 for a first step that the event loop runs).
void name_at_first_step(const void* coroutine, std::uint64_t parent) noexcept
{
    const Asyncio& types = asyncio();
    if (types.current_task == nullptr)
        return;
    compat::SavedError saved;
    PyObject* task = PyObject_CallNoArgs(types.current_task);
    PyObject* running = task != nullptr && task != Py_None ? coroutine_of(task) : nullptr;
    if (running == coroutine) {
        name_task(task, key_of(coroutine), parent);
        t_first_stepped = task;
    }
    Py_XDECREF(running);
    Py_XDECREF(task);
    PyErr_Clear();
}

} // namespace

Role role_of(const std::string& module, const std::string& qualname) noexcept
{
    if (module == "asyncio.base_events" &&
        (qualname == "BaseEventLoop.create_task" || qualname == "create_task"))
        return Role::factory;
    if (module == "asyncio.tasks" && qualname == "create_task")
        return Role::factory;
    if (module == "asyncio.tasks" && (qualname == "ensure_future" || qualname == "_ensure_future"))
        return Role::adopter;
    // 3.11 and 3.12 name a task group's task after the loop's create_task returned it.
    if (module == "asyncio.taskgroups" && qualname == "TaskGroup.create_task")
        return Role::factory;
#if PY_VERSION_HEX >= 0x030C0000
    if (module == "asyncio.base_events" && qualname == "BaseEventLoop.is_running")
        return Role::eager_probe;
#else
    if (module == "asyncio.events" && (qualname == "Handle._run" || qualname == "_run"))
        return Role::step_runner;
    if (module == "asyncio.tasks" && (qualname == "Task.__step" || qualname == "__step"))
        return Role::step_runner;
#endif
    return Role::none;
}

bool is_eager_start(const void* coroutine) noexcept
{
    detail::t_eager_hint = false;
    const Asyncio& types = asyncio();
    if (types.current_task == nullptr || coroutine == nullptr)
        return false;
    compat::SavedError saved;
    PyObject* task = PyObject_CallNoArgs(types.current_task);
    PyObject* running = task != nullptr && task != Py_None ? coroutine_of(task) : nullptr;
    Py_XDECREF(running); // compared by identity: the task holds it
    Py_XDECREF(task);
    PyErr_Clear();
    return running == coroutine;
}

bool is_task(const void* root) noexcept
{
    const auto known = s_tasks.find(key_of(root));
    return known != s_tasks.end() && known->second.has_stepped;
}

Step enter_step(const void* coroutine, bool is_traced, const void* task_root) noexcept
{
    Step step{t_current, detail::t_yields, nullptr, task_root != nullptr, is_traced};
    const std::uint64_t key = key_of(task_root != nullptr ? task_root : coroutine);
    detail::t_yields = 0;
    bool is_unnamed = false;
    try {
        const auto [entry, is_new] = s_tasks.try_emplace(key);
        step.suspension = &entry->second.suspension;
        is_unnamed = is_new; // a first step that no factory named
        entry->second.has_stepped = true;
    } catch (...) { // out of memory: the next step says it resumes nothing
    }
    if (is_unnamed)
        name_at_first_step(coroutine, step.outer_task);
    // A root that an exception thrown into its task resumes (an inner one, or the task's own
    // as the cascade of an inner one's end reaches it).
    const bool is_cascade = t_unwinding == key && key != 0;
    const bool is_thrown = step.is_inner || is_cascade;
    const bool is_told = is_cascade && t_is_cascade_told;
    t_unwinding = 0;
    t_current = key;
    if (!step.is_inner || is_traced) {
        const Suspension last = step.suspension != nullptr ? *step.suspension : Suspension{};
        s_state.emitter->task_step(key, last.resumed, last.awaited, last.awaited_id,
                                   is_told     ? 2
                                   : is_thrown ? 1
                                               : 0);
        t_is_cascade_told = true;
    } else {
        t_is_cascade_told = is_told;
    }
    return step;
}

void leave_step(const Step& step, const void* coroutine, End end, PyObject* value,
                const void* runner) noexcept
{
    if (step.is_inner) {
        // The frames of the chain outside the inner root stay suspended; the root's own counts
        // when it is traced; the frames that yielded below it join them.
        if (step.suspension == nullptr) { // out of memory at its task's first step
            t_current = step.outer_task;
            detail::t_yields = step.outer_yields;
            return;
        }
        Suspension& suspension = *step.suspension;
        const std::uint32_t outside =
            suspension.resumed - (step.is_traced && suspension.resumed > 0 ? 1 : 0);
        if (end == End::yielded) {
            const Suspension awaited = awaited_of(value);
            suspension.awaited = awaited.awaited;
            suspension.awaited_id = awaited.awaited_id;
            suspension.resumed = outside + detail::t_yields + (step.is_traced ? 1 : 0);
        } else {
            suspension.resumed = outside;
            t_unwinding = t_current;
        }
        t_current = step.outer_task;
        detail::t_yields = step.outer_yields;
        return;
    }
    if (end == End::yielded) {
        if (step.suspension != nullptr) {
            *step.suspension = awaited_of(value);
            step.suspension->resumed = detail::t_yields + 1; // and the root
        }
    } else {
        const std::uint64_t key = key_of(coroutine);
        s_tasks.erase(key);
        const bool is_deferred = end == End::raised && value == nullptr && runner != nullptr &&
                                 PyErr_Occurred() == nullptr && defer_end(key, runner);
        if (!is_deferred)
            s_state.emitter->task_end(key, end == End::raised ? (is_cancelled(value) ? 2 : 1) : 0);
    }
    t_current = step.outer_task;
    detail::t_yields = step.outer_yields;
}

bool is_async_yield(PyObject* value) noexcept
{
    // Every version since 3.6 wraps an async generator's items in this private type, which
    // the generator's asend() unwraps.
    return value != nullptr &&
           std::strcmp(Py_TYPE(value)->tp_name, "async_generator_wrapped_value") == 0;
}

void on_runner_return(const void* frame) noexcept
{
    if (t_deferred.runner == frame && frame != nullptr)
        end_deferred();
}

void on_factory_return(PyObject* result, bool is_adopter) noexcept
{
    if (!s_state.is_active || result == Py_None)
        return;
    // gather's ensure_future hands back the task the loop's create_task, inside it, just named.
    if (is_adopter && result == t_last_task)
        return;
    compat::SavedError saved;
    const Asyncio& methods = asyncio();
    // A task that ran its first step already (eagerly, inside its factory) and finished there
    // was named by that step; its coroutine is gone (3.12's C Task lets it go: get_coro()
    // crashes on 3.12.0 and 3.12.1, and gives None on 3.13.0), and its end is in the trace: a
    // name given from now on (3.12's and 3.13's create_task name the task their factory
    // returned) is not told. An adopter may hand back any task, one that ended long ago too.
    bool is_done = false;
    if (is_adopter || result == t_first_stepped) {
        PyObject* done = call_method(result, methods.done);
        is_done = done != nullptr && PyObject_IsTrue(done) == 1;
        Py_XDECREF(done);
    }
    PyObject* coroutine = is_done ? nullptr : coroutine_of(result);
    if (coroutine != nullptr) {
        const std::uint64_t key = key_of(coroutine);
        const bool is_named = s_tasks.count(key) != 0;
        if (!is_adopter || !is_named)
            name_task(result, key, t_current);
        Py_DECREF(coroutine);
    }
    PyErr_Clear();
}

} // namespace pyust::hook::tasks
