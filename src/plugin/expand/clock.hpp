// The time units of filter.pyust.expand: its sentinels for "no time yet" and "no limit", and
// Clock, which converts between LTTng's ns (the records' clock) and a stream class's default
// clock (its cycles and its ns from origin).
#pragma once

#include <babeltrace2/babeltrace.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace pyust::plugin::expand {

// A time later than any: no limit on what may be released.
constexpr std::int64_t forever = std::numeric_limits<std::int64_t>::max();
// A time earlier than any: nothing has arrived or been granted yet.
constexpr std::int64_t never = std::numeric_limits<std::int64_t>::min();
constexpr std::uint64_t ns_per_second = 1000000000;

__extension__ typedef unsigned __int128 Wide;

// A stream class's default clock: LTTng's counts ns (frequency 1e9), so a
// record's time in ns is its clock value; other frequencies are converted.
class Clock {
public:
    // Precondition: clock_class is not null and outlives the Clock. Throws Error when cycle 0
    // has no ns from origin.
    explicit Clock(const bt_clock_class* clock_class);

    // The clock value of a time in ns on LTTng's clock. noexcept.
    std::uint64_t value_of_ns(std::uint64_t ns) const noexcept
    {
        if (m_frequency == ns_per_second)
            return ns;
        return static_cast<std::uint64_t>(static_cast<Wide>(ns) * m_frequency / ns_per_second);
    }

    // ns from the origin of a clock value. Throws Error on overflow.
    std::int64_t time_of(std::uint64_t value) const
    {
        if (m_frequency == ns_per_second && value <= static_cast<std::uint64_t>(forever) &&
            static_cast<std::int64_t>(value) <= forever - std::max<std::int64_t>(m_origin, 0))
            return m_origin + static_cast<std::int64_t>(value);
        return converted_time_of(value);
    }

    // The clock value of a time in ns from the origin (0 for a time before cycle
    // 0). noexcept.
    std::uint64_t value_of_time(std::int64_t time) const noexcept
    {
        if (time <= m_origin)
            return 0;
        const Wide since = static_cast<Wide>(static_cast<std::uint64_t>(time - m_origin));
        return static_cast<std::uint64_t>(since * m_frequency / ns_per_second);
    }

private:
    // time_of() by libbabeltrace2's conversion, for a clock not in ns or a value near the
    // limits. Throws Error on overflow (and clears libbabeltrace2's error).
    std::int64_t converted_time_of(std::uint64_t value) const;

    const bt_clock_class* m_class;
    std::uint64_t m_frequency = ns_per_second;
    std::int64_t m_origin = 0;
};

} // namespace pyust::plugin::expand
