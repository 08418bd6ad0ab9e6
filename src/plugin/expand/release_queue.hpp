// The release queue of filter.pyust.expand: forwarded messages wait in a FIFO (they arrive in
// time order), the runs of records of each batch (and the discarded-events messages of ours)
// in a heap keyed by their next entry; release() in the iterator takes from whichever is
// earlier in (time, arrival) order.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "plugin/common/bt_util.hpp"
#include "plugin/expand/classes.hpp"
#include "plugin/expand/records.hpp"

namespace pyust::plugin::expand {

// A forwarded message waiting for release.
struct Pending {
    std::int64_t time;
    std::uint64_t arrival;
    const bt_message* message; // owned
};

// The common context that the records of a batch carry: a small event message
// of ours (a python:return in the batch's packet) holding a copy of the batch's
// common context, and with it the packet and the stream. One serves every batch
// of a thread on a stream while the context stays the same: the batch messages
// are dropped once decoded, since their record arrays take some hundred times
// the memory of the records.
struct ContextSource {
    MessageRef message;
};

// What waits in the heap: the records of a batch not released yet (its bytes,
// read one record ahead), or a single message of ours (a discarded-events one).
struct Run {
    std::uint64_t arrival = 0;
    std::vector<std::uint8_t> bytes; // the batch's records (reader views them)
    RecordReader reader;
    Record current;                    // the next record to release
    const bt_stream* stream = nullptr; // the batch's (alive while context is)
    const Target* target = nullptr;
    std::shared_ptr<const ContextSource> context;
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    MessageRef single;
    std::int64_t single_time = 0;

    std::int64_t time() const noexcept { return single ? single_time : current.time; }
    // Reads the next record into current, with its time on the stream's clock:
    // false at the end of the batch (whose bytes were checked whole before).
    // Precondition: target is set. Throws Error when its time overflows.
    bool advance()
    {
        if (!reader.next(current))
            return false;
        current.value = target->clock->value_of_ns(current.value);
        current.time = target->clock->time_of(current.value);
        return true;
    }
};

// Heap order: the run whose next entry is earliest (then arrived first) on top.
inline bool is_later(const std::unique_ptr<Run>& a, const std::unique_ptr<Run>& b) noexcept
{
    const std::int64_t ta = a->time();
    const std::int64_t tb = b->time();
    return ta != tb ? ta > tb : a->arrival > b->arrival;
}

// The forwarded messages and the runs waiting for release, each numbered on arrival.
class ReleaseQueue {
public:
    ReleaseQueue() = default;
    ReleaseQueue(const ReleaseQueue&) = delete;
    ReleaseQueue& operator=(const ReleaseQueue&) = delete;
    // Puts the references of the messages still waiting.
    ~ReleaseQueue();

    // What comes next up to a time.
    enum class Next { none, pending, run };

    // Whether nothing waits. noexcept.
    bool is_empty() const noexcept { return m_pending.empty() && m_runs.empty(); }

    // Puts a forwarded message at the end of the FIFO. Precondition: time is not before the
    // time of the message last pushed. Throws std::bad_alloc (message is then put).
    void push(MessageRef message, std::int64_t time)
    {
        m_pending.push_back(Pending{time, m_arrivals++, message.get()});
        message.release();
    }

    // Puts a run into the heap, numbered as the latest arrival. Precondition: its time() is
    // set. Throws std::bad_alloc.
    void push(std::unique_ptr<Run> run)
    {
        run->arrival = m_arrivals++;
        m_runs.push_back(std::move(run));
        std::push_heap(m_runs.begin(), m_runs.end(), is_later);
    }

    // Which of the FIFO's front and the heap's top comes first in (time, arrival) order, if
    // either is at or before limit. noexcept.
    Next next(std::int64_t limit) const noexcept;

    // Takes the FIFO's front message (the caller owns its reference). Precondition: next()
    // returned pending. noexcept.
    const bt_message* pop_pending() noexcept
    {
        const Pending pending = m_pending.front();
        m_pending.pop_front();
        return pending.message;
    }

    // Takes out of the FIFO the packet beginning of stream waiting there (the caller owns its
    // reference) when no other message of stream waits before it; else null. Scans the FIFO:
    // for the rare record that falls between two packets of its stream. noexcept.
    const bt_message* take_packet_beginning(const bt_stream* stream) noexcept;

    // Takes the heap's top run out of heap order; it stays in the queue (at its back) until
    // restore_run() or drop_run(). Precondition: next() returned run. noexcept.
    Run& take_run() noexcept
    {
        std::pop_heap(m_runs.begin(), m_runs.end(), is_later);
        return *m_runs.back();
    }

    // Puts the run take_run() gave back into heap order (after its advance()). noexcept.
    void restore_run() noexcept { std::push_heap(m_runs.begin(), m_runs.end(), is_later); }

    // Destroys the run take_run() gave. noexcept.
    void drop_run() noexcept { m_runs.pop_back(); }

private:
    std::deque<Pending> m_pending;            // forwarded messages waiting, in arrival order
    std::vector<std::unique_ptr<Run>> m_runs; // a heap (is_later)
    std::uint64_t m_arrivals = 0;
};

} // namespace pyust::plugin::expand
