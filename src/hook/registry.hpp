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

// What the hook knows about one code object. Its address is stable for the
// life of the process, so the hook stores a pointer to it on the code object.
struct CodeInfo {
    std::uint64_t id = 0;
    bool is_traced = false; // false: the hook emits nothing for this code object
    // The filter generation is_traced was decided under: start() with new
    // module filters begins a new generation, and the hook decides again.
    std::uint32_t generation = 0;
    bool is_hidden = false; // never traced, whatever the filter (pyust's runner frames)
    std::string module;
    std::string qualname;
    std::string file;
    std::uint32_t first_line = 0;
};

class Registry {
public:
    // Creates the process's id space. Precondition: pid is the caller's pid.
    explicit Registry(std::uint32_t pid) noexcept : m_pid(pid) {}

    // Registers a code object and returns its info, with a new id.
    // Throws std::bad_alloc, or std::length_error once 2^32 - 1 ids are used.
    CodeInfo& add(std::string module, std::string qualname, std::string file,
                  std::uint32_t first_line, bool is_traced);

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
