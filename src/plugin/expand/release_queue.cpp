// ReleaseQueue (see release_queue.hpp): choosing between the FIFO and the heap.
#include "plugin/expand/release_queue.hpp"

#include "plugin/expand/message_time.hpp"

namespace pyust::plugin::expand {

ReleaseQueue::~ReleaseQueue()
{
    for (const Pending& pending : m_pending)
        bt_message_put_ref(pending.message);
}

ReleaseQueue::Next ReleaseQueue::next(std::int64_t limit) const noexcept
{
    const bool is_pending = !m_pending.empty() && m_pending.front().time <= limit;
    const bool is_run = !m_runs.empty() && m_runs.front()->time() <= limit;
    if (!is_pending && !is_run)
        return Next::none;
    if (is_pending && (!is_run || m_pending.front().time < m_runs.front()->time() ||
                       (m_pending.front().time == m_runs.front()->time() &&
                        m_pending.front().arrival < m_runs.front()->arrival)))
        return Next::pending;
    return Next::run;
}

const bt_message* ReleaseQueue::take_packet_beginning(const bt_stream* stream) noexcept
{
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it) {
        if (stream_of(it->message) != stream)
            continue;
        if (bt_message_get_type(it->message) != BT_MESSAGE_TYPE_PACKET_BEGINNING)
            return nullptr;
        const bt_message* message = it->message;
        m_pending.erase(it);
        return message;
    }
    return nullptr;
}

} // namespace pyust::plugin::expand
