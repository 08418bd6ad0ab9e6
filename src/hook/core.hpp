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
#include "session.hpp"
#include "stacks.hpp"
#include "state.hpp"

namespace pyust::hook {

} // namespace pyust::hook
