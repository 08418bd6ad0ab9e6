// The standard mode: every Python event becomes one python:* tracepoint.
#include "emitter.hpp"

#include "python_tp.h"

namespace pyust::hook {
namespace {

class LttngEmitter final : public Emitter {
public:
    void code(const CodeInfo& info) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, code, info.id, info.module.c_str(), info.qualname.c_str(),
                             info.file.c_str(), info.first_line);
    }
    void call(const CodeInfo& info) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, call, info.id, info.qualname.c_str());
    }
    void ret(const CodeInfo& info, bool is_unwind) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, return, info.id, is_unwind ? 1 : 0);
    }
    void line(const CodeInfo& info, std::uint32_t line) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, line, info.id, line);
    }
    void c_call(const char* name, const char* owner) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, c_call, name, owner);
    }
    void c_return(bool has_raised) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, c_return, has_raised ? 1 : 0);
    }
    void thread(std::int64_t tid, const char* name) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, thread, tid, name);
    }
    void process(const char* version, const char* backend, bool has_lines,
                 bool has_c_calls) noexcept override
    {
        ++m_emitted;
        lttng_ust_tracepoint(python, process, version, backend, has_lines ? 1 : 0,
                             has_c_calls ? 1 : 0);
    }
    bool is_code_enabled() const noexcept override
    {
        return lttng_ust_tracepoint_enabled(python, code);
    }
    bool is_recording() const noexcept override
    {
        return lttng_ust_tracepoint_enabled(python, call) ||
               lttng_ust_tracepoint_enabled(python, return) ||
               lttng_ust_tracepoint_enabled(python, line);
    }
};

} // namespace

Emitter& lttng_emitter() noexcept
{
    static LttngEmitter emitter;
    return emitter;
}

} // namespace pyust::hook
