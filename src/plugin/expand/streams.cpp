// StreamTable (see streams.hpp): forgetting a stream, and placing a record.
#include "plugin/expand/streams.hpp"

namespace pyust::plugin::expand {

std::string stream_name(const bt_stream* stream)
{
    const char* name = bt_stream_get_name(stream);
    return name ? name : "id " + std::to_string(bt_stream_get_id(stream));
}

void StreamTable::erase(const bt_stream* stream) noexcept
{
    m_streams.erase(stream);
    m_last_stream = nullptr;
}

const bt_packet* StreamTable::place(const bt_stream* stream,
                                    const bt_stream** placed) const noexcept
{
    // The batch's stream if it is open at this point of the output, else another
    // stream of the same class in the same trace.
    const bt_stream_class* stream_class = bt_stream_borrow_class_const(stream);
    const bool has_packets = bt_stream_class_supports_packets(stream_class);
    if (const StreamState* own = find(stream);
        own && (has_packets ? static_cast<bool>(own->packet) : own->is_active)) {
        *placed = stream;
        return own->packet.get();
    }
    const bt_trace* trace = bt_stream_borrow_trace_const(stream);
    for (const auto& [other, state] : m_streams) {
        if (bt_stream_borrow_class_const(other) != stream_class ||
            bt_stream_borrow_trace_const(other) != trace)
            continue;
        if (has_packets ? static_cast<bool>(state.packet) : state.is_active) {
            *placed = other;
            return state.packet.get();
        }
    }
    *placed = nullptr;
    return nullptr;
}

} // namespace pyust::plugin::expand
