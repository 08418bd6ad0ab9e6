// The hook's memory of what it has seen: every registered code object (id and
// names) and every named thread. It outlives code objects, so that a rundown can
// re-emit every name a trace may refer to. Plain C++, no Python: the hook calls
// it with the GIL held, which is what serialises it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace pyust::hook {

// Builds a code id: the registering process's pid in the high 32 bits, a
// per-process sequence number in the low 32 bits (see tracepoints/python_tp.h).
constexpr std::uint64_t make_code_id(std::uint32_t pid, std::uint32_t seq) noexcept
{
    return (static_cast<std::uint64_t>(pid) << 32) | seq;
}

// The file name python:code records for code compiled with an empty one
// (compile(source, "", "exec"), as attrs does): babeltrace2 2.0.4's text dump
// prints an empty string field as the value that field had in an earlier event
// (bt_field_string_clear() sets the length to 0 and leaves the old bytes, which
// bt_field_string_get_value() returns), so an empty file would read as another
// code object's file. The analysis shows the same text for "" in older traces
// (src/analysis/stack_model.hpp, no_file_name).
inline constexpr const char* k_no_file_name = "<no file name>";

// The bits of CodeInfo::trace: what the back ends do at a code object's calls and returns,
// tested once on their per-event paths. trace == k_traced, the plain case, is their fast path;
// any other nonzero value (k_asyncio set) takes their asyncio path, so that the cost of tasks
// falls on the code that plays a part in them alone.
constexpr std::uint8_t k_traced = 1;  // the hook emits this code's events (the filter's verdict)
constexpr std::uint8_t k_asyncio = 2; // an async def's code or a task factory (tasks.hpp)

// What the hook knows about one code object. Its address is stable for the
// life of the process, so the hook stores a pointer to it on the code object.
struct CodeInfo {
    std::uint64_t id = 0;
    std::uint8_t trace = 0; // k_traced, k_asyncio; without k_traced the hook emits nothing
    // The filter generation k_traced was decided under: start() with new
    // module filters begins a new generation, and the hook decides again.
    std::uint32_t generation = 0;
    bool is_hidden = false; // never traced, whatever the filter (pyust's runner frames)
    std::string module;     // never empty: "?" when __name__ is not a str (or is "")
    std::string qualname;   // never empty: "?" when it is
    std::string file;       // never empty: k_no_file_name for an empty co_filename
    std::uint32_t first_line = 0;
    std::string name; // co_name; never empty: "?" when it is
    // asyncio (tasks.hpp; either sets k_asyncio): code that returns a new task (an event loop's
    // create_task), and an async def's code (CO_COROUTINE), whose frame may be a task's root.
    bool is_task_factory = false;
    bool is_task_adopter = false; // a factory of tasks it may not have made (Role::adopter)
    bool is_coroutine = false;
    // An async generator's frame may be part of a task's await chain (an await in its body).
    bool is_async_generator = false;
    bool is_step_runner = false; // runs a task's step (tasks::Role::step_runner)
    bool is_eager_probe = false; // asks whether a task may start eagerly (Role::eager_probe)
    // The generation in which python:code registered it as a task's root frame, which is
    // recorded even when the filter leaves its code out (0: never).
    std::uint32_t root_generation = 0;
};

class Registry {
public:
    // Creates the process's id space. Precondition: pid is the caller's pid.
    explicit Registry(std::uint32_t pid) noexcept : m_pid(pid) {}

    // Registers a code object and returns its info, with a new id. name is
    // co_name (empty: the qualified name's last part). No string of the info is
    // empty (see CodeInfo): python:code never records an empty string.
    // Throws std::bad_alloc, or std::length_error once 2^32 - 1 ids are used.
    CodeInfo& add(std::string module, std::string qualname, std::string file,
                  std::uint32_t first_line, bool is_traced, std::string name = {});

    // Records a thread's name (replacing an older name for the same tid).
    // Throws std::bad_alloc.
    void set_thread_name(std::int64_t tid, std::string name);

    // Starts a new id space after fork(): ids made from now on carry the
    // child's pid. Known code objects keep the ids the parent gave them, which
    // stay valid since the parent registered them in the same trace.
    // The parent's threads are gone in the child (the forking one lives on
    // under a new tid, which the caller names again): forget them all.
    void after_fork_child(std::uint32_t pid) noexcept;

    template <typename F> void for_each_code(F&& fn) const
    {
        for (const auto& info : m_codes)
            fn(info);
    }
    template <typename F> void for_each_code(F&& fn)
    {
        for (auto& info : m_codes)
            fn(info);
    }
    template <typename F> void for_each_thread(F&& fn) const
    {
        for (const auto& [tid, name] : m_threads)
            fn(tid, name);
    }

    std::size_t code_count() const noexcept { return m_codes.size(); }

private:
    std::uint32_t m_pid;
    std::uint32_t m_next_seq = 1;
    std::deque<CodeInfo> m_codes; // a deque: push_back never moves elements
    std::map<std::int64_t, std::string> m_threads;
};

} // namespace pyust::hook
