// time_of() and stream_of() (see message_time.hpp): one case per message type.
#include "plugin/expand/message_time.hpp"

#include "plugin/common/event_reader.hpp"

namespace pyust::plugin::expand {

std::int64_t time_of(const bt_message* message, std::int64_t fallback)
{
    const bt_clock_snapshot* snapshot = nullptr;
    switch (bt_message_get_type(message)) {
    case BT_MESSAGE_TYPE_EVENT:
        if (bt_message_event_borrow_stream_class_default_clock_class_const(message))
            snapshot = bt_message_event_borrow_default_clock_snapshot_const(message);
        break;
    case BT_MESSAGE_TYPE_PACKET_BEGINNING:
        if (bt_stream_class_packets_have_beginning_default_clock_snapshot(
                bt_stream_borrow_class_const(bt_packet_borrow_stream_const(
                    bt_message_packet_beginning_borrow_packet_const(message)))))
            snapshot = bt_message_packet_beginning_borrow_default_clock_snapshot_const(message);
        break;
    case BT_MESSAGE_TYPE_PACKET_END:
        if (bt_stream_class_packets_have_end_default_clock_snapshot(bt_stream_borrow_class_const(
                bt_packet_borrow_stream_const(bt_message_packet_end_borrow_packet_const(message)))))
            snapshot = bt_message_packet_end_borrow_default_clock_snapshot_const(message);
        break;
    case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
        if (bt_stream_class_discarded_events_have_default_clock_snapshots(
                bt_stream_borrow_class_const(
                    bt_message_discarded_events_borrow_stream_const(message))))
            snapshot =
                bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(message);
        break;
    case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
        if (bt_stream_class_discarded_packets_have_default_clock_snapshots(
                bt_stream_borrow_class_const(
                    bt_message_discarded_packets_borrow_stream_const(message))))
            snapshot =
                bt_message_discarded_packets_borrow_beginning_default_clock_snapshot_const(message);
        break;
    case BT_MESSAGE_TYPE_STREAM_BEGINNING:
        if (bt_message_stream_beginning_borrow_stream_class_default_clock_class_const(message) &&
            bt_message_stream_beginning_borrow_default_clock_snapshot_const(message, &snapshot) !=
                BT_MESSAGE_STREAM_CLOCK_SNAPSHOT_STATE_KNOWN)
            snapshot = nullptr;
        break;
    case BT_MESSAGE_TYPE_STREAM_END:
        if (bt_message_stream_end_borrow_stream_class_default_clock_class_const(message) &&
            bt_message_stream_end_borrow_default_clock_snapshot_const(message, &snapshot) !=
                BT_MESSAGE_STREAM_CLOCK_SNAPSHOT_STATE_KNOWN)
            snapshot = nullptr;
        break;
    case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY:
        snapshot = bt_message_message_iterator_inactivity_borrow_clock_snapshot_const(message);
        break;
    }
    return snapshot ? ns_from_origin(snapshot) : fallback;
}

const bt_stream* stream_of(const bt_message* message) noexcept
{
    switch (bt_message_get_type(message)) {
    case BT_MESSAGE_TYPE_EVENT:
        return bt_event_borrow_stream_const(bt_message_event_borrow_event_const(message));
    case BT_MESSAGE_TYPE_PACKET_BEGINNING:
        return bt_packet_borrow_stream_const(
            bt_message_packet_beginning_borrow_packet_const(message));
    case BT_MESSAGE_TYPE_PACKET_END:
        return bt_packet_borrow_stream_const(bt_message_packet_end_borrow_packet_const(message));
    case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
        return bt_message_discarded_events_borrow_stream_const(message);
    case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
        return bt_message_discarded_packets_borrow_stream_const(message);
    case BT_MESSAGE_TYPE_STREAM_BEGINNING:
        return bt_message_stream_beginning_borrow_stream_const(message);
    case BT_MESSAGE_TYPE_STREAM_END:
        return bt_message_stream_end_borrow_stream_const(message);
    case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY:
        return nullptr;
    }
    return nullptr;
}

} // namespace pyust::plugin::expand
