// The standard mode: every Python event becomes one python:* tracepoint.
#include "hook/emitter.hpp"

#include "hook/tally.hpp"
#include "python_tp.h"

namespace pyust::hook {
namespace {

// Emits python:NAME and counts it (tally.hpp), only when a session enables the
// event: the count is what LTTng was handed (recorded plus discarded), at the
// cost of the enabled check lttng_ust_tracepoint makes anyway.
#define PYUST_EMIT(NAME, ...)                                                                      \
    do {                                                                                           \
        if (lttng_ust_tracepoint_enabled(python, NAME)) {                                          \
            ++tally().events;                                                                      \
            lttng_ust_do_tracepoint(python, NAME, __VA_ARGS__);                                    \
        }                                                                                          \
    } while (0)

class LttngEmitter final : public Emitter {
public:
    LttngEmitter() noexcept : Emitter(&lttng_ust_tracepoint_python___code.state, nullptr) {}

    void code(const CodeInfo& info) noexcept override
    {
        PYUST_EMIT(code, info.id, info.module.c_str(), info.qualname.c_str(), info.file.c_str(),
                   info.first_line, info.name.c_str());
    }
    void call(const CodeInfo& info) noexcept override
    {
        PYUST_EMIT(call, info.id, info.qualname.c_str());
    }
    void ret(const CodeInfo& info, bool is_unwind) noexcept override
    {
        PYUST_EMIT(return, info.id, is_unwind ? 1 : 0);
    }
    void line(const CodeInfo& info, std::uint32_t line) noexcept override
    {
        PYUST_EMIT(line, info.id, line);
    }
    void c_call(const char* name, const char* owner) noexcept override
    {
        PYUST_EMIT(c_call, name, owner);
    }
    void c_return(bool has_raised) noexcept override { PYUST_EMIT(c_return, has_raised ? 1 : 0); }
    void thread(std::int64_t tid, const char* name) noexcept override
    {
        PYUST_EMIT(thread, tid, name);
    }
    void process(const char* version, const char* backend, bool has_lines, bool has_c_calls,
                 const char* command) noexcept override
    {
        PYUST_EMIT(process, version, backend, has_lines ? 1 : 0, has_c_calls ? 1 : 0, command);
    }
    void lost_start(std::uint64_t lost_ns, std::uint64_t waited_ns) noexcept override
    {
        PYUST_EMIT(lost_start, lost_ns, waited_ns);
    }
    void task(std::uint64_t key, std::uint64_t parent, const char* name) noexcept override
    {
        PYUST_EMIT(task, key, parent, name);
    }
    void task_step(std::uint64_t key, std::uint32_t resumed, std::uint8_t awaited,
                   std::uint64_t awaited_id, std::uint8_t thrown) noexcept override
    {
        PYUST_EMIT(task_step, key, resumed, awaited, awaited_id, thrown);
    }
    void task_end(std::uint64_t key, std::uint8_t state) noexcept override
    {
        PYUST_EMIT(task_end, key, state);
    }
    bool is_recording() const noexcept override
    {
        // clang-format takes the event name `return` for the keyword.
        // clang-format off
        // python:code alone too (`--loglevel-only TRACE_INFO`): which code ran, no timeline.
        return lttng_ust_tracepoint_enabled(python, call) ||
               lttng_ust_tracepoint_enabled(python, return) ||
               lttng_ust_tracepoint_enabled(python, line) ||
               lttng_ust_tracepoint_enabled(python, code);
        // clang-format on
    }
};

} // namespace

#undef PYUST_EMIT

Emitter& lttng_emitter() noexcept
{
    static LttngEmitter emitter;
    return emitter;
}

} // namespace pyust::hook
