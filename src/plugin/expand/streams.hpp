// The upstream streams as filter.pyust.expand sees them: how many events arrived on each, and,
// in output order, whether it is open and which packet is: where an expanded record can go.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "plugin/common/bt_util.hpp"

namespace pyust::plugin::expand {

using PacketRef = Ref<const bt_packet, bt_packet_put_ref>;

struct StreamState {
    std::uint64_t events = 0; // events arrived on the stream so far
    bool is_active = false;   // in output order: begun and not ended
    PacketRef packet;         // in output order: the open packet, if any
};

// A readable name of a stream, for messages. Throws std::bad_alloc.
std::string stream_name(const bt_stream* stream);

// The StreamState of each stream, from its first sight until its end goes out.
class StreamTable {
public:
    // The state of a stream, created on first sight (the latest one is remembered). The
    // reference stays valid until erase(stream). Throws std::bad_alloc.
    StreamState& state(const bt_stream* stream)
    {
        if (stream != m_last_stream) {
            m_last_state = &m_streams[stream];
            m_last_stream = stream;
        }
        return *m_last_state;
    }

    // The state of a stream, or null when it is unknown or has ended. noexcept.
    const StreamState* find(const bt_stream* stream) const noexcept
    {
        const auto it = m_streams.find(stream);
        return it == m_streams.end() ? nullptr : &it->second;
    }

    // Forgets a stream (its end went out), its packet reference included. noexcept.
    void erase(const bt_stream* stream) noexcept;

    // Where a record of stream goes at this point of the output: the packet open on stream
    // (on a stream whose class has no packets: stream itself if it is active), else one open
    // on another stream of the same class in the same trace. Sets *placed to that stream and
    // returns its packet (null for a class without packets); sets *placed to null when there
    // is none. noexcept.
    const bt_packet* place(const bt_stream* stream, const bt_stream** placed) const noexcept;

private:
    std::unordered_map<const bt_stream*, StreamState> m_streams;
    const bt_stream* m_last_stream = nullptr;
    StreamState* m_last_state = nullptr;
};

} // namespace pyust::plugin::expand
