// The parameters of a filter.pyust.expand component (read by expand.cpp's initialize), which
// each of its message iterators copies.
#pragma once

#include <cstdint>

#include "plugin/expand/clock.hpp"

namespace pyust::plugin::expand {

struct Settings {
    std::int64_t max_delay = 5 * static_cast<std::int64_t>(ns_per_second);
    // Once the trace has shown a batch or a horizon, every message waits this
    // long at least: a process whose first horizons are not in the trace (a
    // snapshot, a flight recorder, rotated files) still gets its later batches
    // in order. The hook writes a thread's records within 20 ms (more only
    // when the GIL is held that long), so 200 ms leaves room.
    std::int64_t lookahead = 200 * static_cast<std::int64_t>(ns_per_second / 1000);
    // false: missing records go to standard error only (sink.ctf.fs of
    // babeltrace 2.0 refuses discarded-events messages inside a packet).
    bool report_discarded = true;
};

} // namespace pyust::plugin::expand
