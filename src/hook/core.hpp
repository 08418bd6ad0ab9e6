// What the hook's back ends share (internal to src/hook): the process-wide
// state (state.hpp), code-object lookup and registration, stack announcements,
// and the back-end interface (backend.hpp). Every function requires the GIL.
#pragma once

#include <cstdint>

#include "backend.hpp"
#include "hook.hpp"
#include "python_compat.hpp"
#include "registration.hpp"
#include "registry.hpp"
#include "stacks.hpp"
#include "state.hpp"

namespace pyust::hook {

// The rundown check_session() makes when python:code's enabled flag changed.
void on_session_change() noexcept;

// If a session started recording python:code since the last check, re-emit
// every registration (a rundown). Cheap: a load or two of LTTng's enabled
// flags, inline at every traced call.
inline void check_session() noexcept
{
    if (s_state.emitter->is_code_enabled() != s_state.was_code_enabled) [[unlikely]]
        on_session_change();
}

} // namespace pyust::hook
