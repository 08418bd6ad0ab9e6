// Clock (see clock.hpp): the conversions that go through libbabeltrace2.
#include "plugin/expand/clock.hpp"

#include <string>

#include "plugin/common/bt_util.hpp"

namespace pyust::plugin::expand {

Clock::Clock(const bt_clock_class* clock_class) : m_class(clock_class)
{
    m_frequency = bt_clock_class_get_frequency(clock_class);
    if (bt_clock_class_cycles_to_ns_from_origin(clock_class, 0, &m_origin) !=
        BT_CLOCK_CLASS_CYCLES_TO_NS_FROM_ORIGIN_STATUS_OK) {
        bt_current_thread_clear_error();
        throw Error("Cannot use the stream's clock: reason=its offset overflows");
    }
}

std::int64_t Clock::converted_time_of(std::uint64_t value) const
{
    std::int64_t time = 0;
    if (bt_clock_class_cycles_to_ns_from_origin(m_class, value, &time) !=
        BT_CLOCK_CLASS_CYCLES_TO_NS_FROM_ORIGIN_STATUS_OK) {
        bt_current_thread_clear_error();
        throw Error("Cannot place a record in time: reason=its time overflows, value=" +
                    std::to_string(value));
    }
    return time;
}

} // namespace pyust::plugin::expand
