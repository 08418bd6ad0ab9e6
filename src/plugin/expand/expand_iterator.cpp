// ExpandIterator (see expand_iterator.hpp): arrival, waiting and release.
#include "plugin/expand/expand_iterator.hpp"

#include <algorithm>

#include "plugin/common/filter_util.hpp"
#include "plugin/expand/message_time.hpp"

namespace pyust::plugin::expand {

ExpandIterator::ExpandIterator(bt_self_message_iterator* self, const Settings& settings)
    : m_self(self), m_settings(settings), m_upstream(create_upstream(self)),
      m_diagnostics(Log(self))
{
}

ExpandIterator::~ExpandIterator()
{
    for (const bt_message* message : m_output)
        bt_message_put_ref(message);
}

bt_message_iterator_class_next_method_status
ExpandIterator::next(bt_message_array_const messages, std::uint64_t capacity, std::uint64_t* count)
{
    for (;;) {
        // Records become messages only as the downstream asks for them: a horizon may release
        // hundreds of thousands at once.
        if (m_output.size() < capacity)
            release(capacity - m_output.size());
        if (!m_output.empty())
            break;
        if (m_is_upstream_ended) {
            if (!m_is_flushed)
                m_diagnostics.summarize();
            m_is_flushed = true;
            if (m_upstream_error) {
                // Everything held is out: now upstream's error, with its causes.
                bt_current_thread_move_error(m_upstream_error.release());
                throw BtError("Cannot get messages from upstream: port=in", false);
            }
            return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
        }
        if (!take_upstream())
            return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_AGAIN;
    }
    std::uint64_t n = 0;
    while (n < capacity && !m_output.empty()) {
        messages[n++] = m_output.front();
        m_output.pop_front();
    }
    *count = n;
    return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
}

bool ExpandIterator::take_upstream()
{
    bt_message_array_const upstream_messages = nullptr;
    std::uint64_t upstream_count = 0;
    Pulled pulled = Pulled::end;
    try {
        pulled = pull(m_upstream.get(), &upstream_messages, &upstream_count);
    } catch (const BtError& error) {
        if (error.is_memory_error())
            throw;
        // A damaged trace: what arrived before the damage still goes out, in order, before
        // the error (a report sink that salvages keeps it all).
        m_upstream_error.reset(bt_current_thread_take_error());
    }
    switch (pulled) {
    case Pulled::messages:
        take_each(upstream_messages, upstream_count, [this](const bt_message* message) {
            arrive(MessageRef(const_cast<bt_message*>(message)));
        });
        grant();
        break;
    case Pulled::again:
        return false;
    case Pulled::end:
        m_is_upstream_ended = true;
        m_limit = forever;
        break;
    }
    return true;
}

void ExpandIterator::arrive(MessageRef message)
{
    const std::int64_t time = std::max(m_latest, time_of(message.get(), m_latest));
    m_latest = time;
    if (bt_message_get_type(message.get()) == BT_MESSAGE_TYPE_EVENT) {
        const bt_event* event = bt_message_event_borrow_event_const(message.get());
        const EventInfo& info = m_classes.info_of(bt_event_borrow_class_const(event));
        const std::uint64_t index = m_streams.state(bt_event_borrow_stream_const(event)).events++;
        switch (info.role) {
        case Role::code:
            on_code(event, info);
            break;
        case Role::horizon:
            m_has_batch_class = true;
            on_horizon(event, info, time);
            grant(); // (dropped) what it vouches for can go
            return;
        case Role::batch:
            m_has_batch_class = true;
            // Whether a record is late must not depend on how upstream grouped its messages.
            grant();
            on_batch(std::move(message), info, time, index);
            return; // replaced by its records
        case Role::other:
            break;
        }
    }
    wait(std::move(message), time);
}

void ExpandIterator::wait(MessageRef message, std::int64_t time)
{
    if (!m_has_batch_class && m_horizons.empty() && m_queue.is_empty()) {
        // Nothing holds the queue (no process in fast mode): straight out.
        m_granted = std::max(m_granted, time);
        emit(message.release());
        return;
    }
    m_queue.push(std::move(message), time);
}

std::int64_t ExpandIterator::limit() noexcept
{
    std::int64_t result = forever;
    if (m_has_batch_class)
        result = m_latest > never + m_settings.lookahead ? m_latest - m_settings.lookahead : never;
    for (const auto& [pid, horizon] : m_horizons) {
        if (m_latest - horizon > m_settings.max_delay) {
            m_diagnostics.stale(pid, m_settings.max_delay);
            continue;
        }
        result = std::min(result, horizon);
    }
    return result;
}

void ExpandIterator::grant() noexcept
{
    if (!m_is_upstream_ended)
        m_limit = limit();
    m_granted = std::max(m_granted, std::min(m_limit, m_latest));
}

void ExpandIterator::release(std::uint64_t budget)
{
    const std::size_t stop = m_output.size() + budget;
    while (m_output.size() < stop) {
        switch (m_queue.next(m_limit)) {
        case ReleaseQueue::Next::none:
            return;
        case ReleaseQueue::Next::pending:
            emit(m_queue.pop_pending());
            continue;
        case ReleaseQueue::Next::run:
            break;
        }
        Run& run = m_queue.take_run();
        if (run.single) {
            if (const StreamState* state = m_streams.find(run.stream); state && state->is_active)
                emit(run.single.release());
            else
                m_diagnostics.report_dropped(run.stream);
            m_queue.drop_run();
            continue;
        }
        emit_record(run, run.current);
        if (!run.advance())
            m_queue.drop_run();
        else
            m_queue.restore_run();
    }
}

void ExpandIterator::emit(const bt_message* message)
{
    MessageRef owned(const_cast<bt_message*>(message));
    switch (bt_message_get_type(message)) {
    case BT_MESSAGE_TYPE_STREAM_BEGINNING:
        m_streams.state(bt_message_stream_beginning_borrow_stream_const(message)).is_active = true;
        break;
    case BT_MESSAGE_TYPE_STREAM_END:
        m_streams.erase(bt_message_stream_end_borrow_stream_const(message));
        break;
    case BT_MESSAGE_TYPE_PACKET_BEGINNING: {
        const bt_packet* packet = bt_message_packet_beginning_borrow_packet_const(message);
        bt_packet_get_ref(packet);
        m_streams.state(bt_packet_borrow_stream_const(packet)).packet.reset(packet);
        break;
    }
    case BT_MESSAGE_TYPE_PACKET_END:
        m_streams
            .state(
                bt_packet_borrow_stream_const(bt_message_packet_end_borrow_packet_const(message)))
            .packet.reset();
        break;
    default:
        break;
    }
    m_output.push_back(owned.get());
    owned.release();
}

void ExpandIterator::emit_record(const Run& run, const Record& record)
{
    if ((record.kind == RecordKind::task && !run.target->task) ||
        (record.kind == RecordKind::task_step && !run.target->task_step) ||
        (record.kind == RecordKind::task_end && !run.target->task_end))
        return; // the trace has no python:task, python:task_step or python:task_end (see Target)
    const bt_stream* stream = nullptr;
    const bt_packet* packet = m_streams.place(run.stream, &stream);
    if (!stream && open_packet_early(run, record))
        packet = m_streams.place(run.stream, &stream);
    if (!stream) {
        m_diagnostics.unplaced(run.pid, run.tid);
        return;
    }
    emit(record_event(m_self, run, record, packet, stream, m_names).release());
}

bool ExpandIterator::open_packet_early(const Run& run, const Record& record)
{
    MessageRef waiting(const_cast<bt_message*>(m_queue.take_packet_beginning(run.stream)));
    if (!waiting)
        return false;
    const bt_packet* packet = bt_message_packet_beginning_borrow_packet_const(waiting.get());
    bt_message* early = nullptr;
    if (bt_stream_class_packets_have_beginning_default_clock_snapshot(
            bt_stream_borrow_class_const(run.stream))) {
        const std::uint64_t own = bt_clock_snapshot_get_value(
            bt_message_packet_beginning_borrow_default_clock_snapshot_const(waiting.get()));
        early = bt_message_packet_beginning_create_with_default_clock_snapshot(
            m_self, packet, std::min(own, record.value));
    } else {
        early = bt_message_packet_beginning_create(m_self, packet);
    }
    emit(check_new(early, "Cannot create a packet beginning message"));
    return true;
}

} // namespace pyust::plugin::expand
