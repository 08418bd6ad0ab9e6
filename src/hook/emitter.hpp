// The one interface between the hook and the events it produces: the standard
// mode (one LTTng tracepoint per Python event, lttng_emitter.cpp) and the fast
// mode (per-thread batches of records, batch_emitter.cpp). Every method is
// called with the GIL held, must not allocate (but for a thread's first batch
// record), and never fails.
#pragma once

#include <cstdint>

#include "hook/registry.hpp"

namespace pyust::hook {

class Emitter {
public:
    virtual ~Emitter() = default;

    virtual void code(const CodeInfo& info) noexcept = 0;
    virtual void call(const CodeInfo& info) noexcept = 0;
    virtual void ret(const CodeInfo& info, bool is_unwind) noexcept = 0;
    virtual void line(const CodeInfo& info, std::uint32_t line) noexcept = 0;
    virtual void c_call(const char* name, const char* owner) noexcept = 0;
    virtual void c_return(bool has_raised) noexcept = 0;
    virtual void thread(std::int64_t tid, const char* name) noexcept = 0;
    virtual void process(const char* version, const char* backend, bool has_lines, bool has_c_calls,
                         const char* command) noexcept = 0;
    // python:lost_start: the process ran lost_ns unrecorded after pyust waited waited_ns for
    // the session (both modes: a standard event).
    virtual void lost_start(std::uint64_t lost_ns, std::uint64_t waited_ns) noexcept = 0;
    // python:task, python:task_step and python:task_end (asyncio, tasks.hpp): in the fast mode,
    // records of the thread's batch (a task whose name is too long for one: a standard event).
    virtual void task(std::uint64_t key, std::uint64_t parent, const char* name) noexcept = 0;
    virtual void task_step(std::uint64_t key, std::uint32_t resumed, std::uint8_t awaited,
                           std::uint64_t awaited_id, std::uint8_t thrown) noexcept = 0;
    virtual void task_end(std::uint64_t key, std::uint8_t state) noexcept = 0;

    // True while some session records python:code (or, in the fast mode,
    // python:batch): the hook watches it, at every traced call, to re-emit
    // registrations when a session starts after the program did. Not virtual:
    // two loads of LTTng's enabled flags, which the emitter names.
    bool is_code_enabled() const noexcept
    {
        return __atomic_load_n(m_code_state, __ATOMIC_RELAXED) != 0 ||
               (m_batch_state != nullptr && __atomic_load_n(m_batch_state, __ATOMIC_RELAXED) != 0);
    }

    // True while some session records Python's calls, returns or lines: with
    // none, a dormant hook removes itself from the interpreter. Safe to call
    // without the GIL (it reads LTTng's enabled flags).
    virtual bool is_recording() const noexcept = 0;

    // The fast mode's extras; no-ops in the standard mode.
    // A session starts receiving events: drop what a session that ended left
    // unwritten, and emit the first python:horizon.
    virtual void begin() noexcept {}
    // Writes every thread's records, then a python:horizon (final: the
    // process records no more).
    virtual void flush_all(bool is_final) noexcept { (void)is_final; }
    // In the child of fork(): forget the parent's records and threads.
    virtual void after_fork_child(std::uint32_t pid) noexcept { (void)pid; }

protected:
    // code_state: python:code's enabled flag; batch_state: python:batch's in the fast mode,
    // else nullptr.
    Emitter(const int* code_state, const int* batch_state) noexcept
        : m_code_state(code_state), m_batch_state(batch_state)
    {
    }

private:
    const int* m_code_state;
    const int* m_batch_state;
};

// The standard mode's emitter: one python:* tracepoint per event.
Emitter& lttng_emitter() noexcept;

// The fast mode's emitter: python:batch and python:horizon, with the standard
// events for what is not a call, return or line.
Emitter& batch_emitter() noexcept;

} // namespace pyust::hook
