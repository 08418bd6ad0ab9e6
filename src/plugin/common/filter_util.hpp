// What pyust's filter components share: their ports, their upstream message
// iterator, taking over an upstream batch of messages, and the bridges of the
// message iterator's C callbacks.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>

#include "plugin/common/bt_util.hpp"

namespace pyust::plugin {

// Adds a filter's input port "in" and output port "out". Throws BtError.
inline void add_filter_ports(bt_self_component_filter* self)
{
    check(bt_self_component_filter_add_input_port(self, "in", nullptr, nullptr),
          "Cannot add the input port: name=in");
    check(bt_self_component_filter_add_output_port(self, "out", nullptr, nullptr),
          "Cannot add the output port: name=out");
}

// Creates the message iterator of a filter's input port "in". Throws BtError.
inline MessageIteratorRef create_upstream(bt_self_message_iterator* self)
{
    bt_self_component_port_input* port = bt_self_component_filter_borrow_input_port_by_name(
        reinterpret_cast<bt_self_component_filter*>(
            bt_self_message_iterator_borrow_component(self)),
        "in");
    bt_message_iterator* upstream = nullptr;
    check(bt_message_iterator_create_from_message_iterator(self, port, &upstream),
          "Cannot create the upstream message iterator: port=in");
    return MessageIteratorRef(upstream);
}

// Hands the count upstream messages (whose references the caller owns) to take,
// in order; take owns each one from then on. When take throws, puts the
// references not handed over yet and rethrows.
template <typename Take>
void take_each(bt_message_array_const messages, std::uint64_t count, Take&& take)
{
    std::uint64_t i = 0;
    try {
        for (; i < count; ++i)
            take(messages[i]);
    } catch (...) {
        for (++i; i < count; ++i)
            bt_message_put_ref(messages[i]);
        throw;
    }
}

// The "next" bridge of a filter whose message iterator data is an Iterator:
// calls its next(messages, capacity, count) under guard(). noexcept.
template <typename Iterator>
bt_message_iterator_class_next_method_status
next_bridge(bt_self_message_iterator* self, bt_message_array_const messages, std::uint64_t capacity,
            std::uint64_t* count, const char* action) noexcept
{
    const CauseSink cause(self);
    return guard(cause, action, BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR,
                 BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_MEMORY_ERROR, [&] {
                     return static_cast<Iterator*>(bt_self_message_iterator_get_data(self))
                         ->next(messages, capacity, count);
                 });
}

// The "initialize" bridge of a message iterator whose data is an Iterator: sets it to the
// Iterator that make() returns (a new one, owned by the message iterator from then on) under
// guard(). noexcept.
template <typename Iterator, typename Make>
bt_message_iterator_class_initialize_method_status
iterator_initialize_bridge(bt_self_message_iterator* self, const char* action, Make make) noexcept
{
    const CauseSink cause(self);
    return guard(cause, action, BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_ERROR,
                 BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR, [&] {
                     Iterator* iterator = make();
                     bt_self_message_iterator_set_data(self, iterator);
                     return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
                 });
}

// The "finalize" bridge of a message iterator whose data is an Iterator: deletes it. noexcept.
template <typename Iterator> void iterator_finalize_bridge(bt_self_message_iterator* self) noexcept
{
    delete static_cast<Iterator*>(bt_self_message_iterator_get_data(self));
}

} // namespace pyust::plugin
