// ReleaseQueue (see release_queue.hpp): choosing between the FIFO and the heap.
#include "release_queue.hpp"

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

} // namespace pyust::plugin::expand
