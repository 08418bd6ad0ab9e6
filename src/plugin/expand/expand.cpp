// filter.pyust.expand (see expand.hpp): the component's C callbacks, each a noexcept bridge to
// the C++ code (the settings here, the message iterator in expand_iterator.hpp).
#include "plugin/expand/expand.hpp"

#include <memory>
#include <string>

#include "plugin/common/bt_util.hpp"
#include "plugin/common/filter_util.hpp"
#include "plugin/common/params.hpp"
#include "plugin/expand/expand_iterator.hpp"
#include "plugin/expand/settings.hpp"

namespace pyust::plugin::expand {

namespace {

// Reads the component's parameters. Throws Error for an unknown parameter, a value of the
// wrong type or a negative time, std::bad_alloc.
Settings read_settings(const bt_value* params)
{
    check_known_params(params, {"max-delay", "lookahead", "report-discarded"});
    Settings settings;
    settings.max_delay = int_param(params, "max-delay").value_or(settings.max_delay);
    if (settings.max_delay < 0)
        throw Error("bad parameter value: name=max-delay, value=" +
                    std::to_string(settings.max_delay) + ", expected=ns >= 0");
    settings.lookahead = int_param(params, "lookahead").value_or(settings.lookahead);
    if (settings.lookahead < 0)
        throw Error("bad parameter value: name=lookahead, value=" +
                    std::to_string(settings.lookahead) + ", expected=ns >= 0");
    settings.report_discarded =
        bool_param(params, "report-discarded").value_or(settings.report_discarded);
    return settings;
}

} // namespace

bt_component_class_initialize_method_status initialize(bt_self_component_filter* self,
                                                       bt_self_component_filter_configuration*,
                                                       const bt_value* params, void*) noexcept
{
    const CauseSink cause(bt_self_component_filter_as_self_component(self));
    return guard(cause, "Cannot initialize filter.pyust.expand",
                 BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR,
                 BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR, [&] {
                     auto settings = std::make_unique<Settings>(read_settings(params));
                     add_filter_ports(self);
                     bt_self_component_set_data(bt_self_component_filter_as_self_component(self),
                                                settings.release());
                     return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
                 });
}

void finalize(bt_self_component_filter* self) noexcept
{
    delete static_cast<Settings*>(
        bt_self_component_get_data(bt_self_component_filter_as_self_component(self)));
}

bt_message_iterator_class_initialize_method_status
iterator_initialize(bt_self_message_iterator* self, bt_self_message_iterator_configuration*,
                    bt_self_component_port_output*) noexcept
{
    return iterator_initialize_bridge<ExpandIterator>(
        self, "Cannot initialize the message iterator of filter.pyust.expand", [&] {
            const auto* settings = static_cast<const Settings*>(
                bt_self_component_get_data(bt_self_message_iterator_borrow_component(self)));
            return new ExpandIterator(self, *settings);
        });
}

bt_message_iterator_class_next_method_status iterator_next(bt_self_message_iterator* self,
                                                           bt_message_array_const messages,
                                                           uint64_t capacity,
                                                           uint64_t* count) noexcept
{
    return next_bridge<ExpandIterator>(self, messages, capacity, count,
                                       "Cannot get the next messages of filter.pyust.expand");
}

void iterator_finalize(bt_self_message_iterator* self) noexcept
{
    iterator_finalize_bridge<ExpandIterator>(self);
}

} // namespace pyust::plugin::expand
