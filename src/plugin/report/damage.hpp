// sink.pyust.report's account of a damaged trace (salvage=yes): why upstream stopped, and what
// the report and its note on standard error say of it.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <string>

#include "analysis/stack_model.hpp"

namespace pyust::plugin::report {

// Takes the current thread's error (upstream could not read on) and returns its innermost
// cause (what the source could not decode) as one line of valid UTF-8, without the object
// addresses of babeltrace2's messages; "unknown error" when it has none. Throws
// std::bad_alloc.
std::string take_upstream_error();

// What babeltrace2 read before the damage and why it stopped, as the report and the note say
// it: "babeltrace2 stopped reading after N events (the latest at T): reason". last_ts is
// INT64_MIN when no event was read. Throws std::bad_alloc.
std::string damage_text(std::uint64_t events_read, analysis::Timestamp last_ts,
                        const std::string& reason);

} // namespace pyust::plugin::report
