// The time of an upstream message, for filter.pyust.expand's (time, arrival) order: its default
// clock snapshot, of whichever kind its message type carries; and the stream it belongs to.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>

namespace pyust::plugin::expand {

// The time of a message in ns from its clock's origin, or fallback when it has no clock
// snapshot (its stream class has no default clock, or a stream beginning or end whose time is
// unknown). Throws Error on overflow.
std::int64_t time_of(const bt_message* message, std::int64_t fallback);

// The stream of a message, or null for one of no stream (an inactivity message). noexcept.
const bt_stream* stream_of(const bt_message* message) noexcept;

} // namespace pyust::plugin::expand
