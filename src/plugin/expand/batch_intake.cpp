// ExpandIterator (see expand_iterator.hpp): the intake of the fast mode's python:* events. A
// batch's header and bytes are read and checked, the thread's sequence is followed (a gap is
// records the tracer lost), and what is left of its records waits as a run.
#include "plugin/expand/expand_iterator.hpp"

#include <algorithm>
#include <vector>

#include "plugin/common/fields.hpp"
#include "plugin/expand/field_copy.hpp"

namespace pyust::plugin::expand {

namespace {

// The fixed fields of a python:batch event. Precondition: info is a batch's. noexcept.
BatchHeader read_header(const bt_field* payload, const EventInfo& info) noexcept
{
    const auto unsigned_of = [&](const FieldMember& member) {
        return static_cast<std::uint64_t>(read_int(payload, member));
    };
    BatchHeader header;
    header.pid = read_int(payload, info.pid);
    header.tid = read_int(payload, info.tid);
    header.first = unsigned_of(info.first);
    header.count = static_cast<std::uint32_t>(unsigned_of(info.count));
    header.id_high = static_cast<std::uint32_t>(unsigned_of(info.id_high));
    header.begin_tsc = unsigned_of(info.begin_tsc);
    header.begin_ns = unsigned_of(info.begin_ns);
    header.end_tsc = unsigned_of(info.end_tsc);
    header.end_ns = unsigned_of(info.end_ns);
    return header;
}

// Copies a python:batch's records field (an array of unsigned bytes) into bytes. Throws
// std::bad_alloc.
void read_bytes(const bt_field* records, std::vector<std::uint8_t>& bytes)
{
    const std::uint64_t size = bt_field_array_get_length(records);
    bytes.resize(size);
    for (std::uint64_t i = 0; i < size; ++i)
        bytes[i] = static_cast<std::uint8_t>(bt_field_integer_unsigned_get_value(
            bt_field_array_borrow_element_field_by_index_const(records, i)));
}

} // namespace

void ExpandIterator::on_code(const bt_event* event, const EventInfo& info)
{
    const bt_field* payload = bt_event_borrow_payload_field_const(event);
    m_names[static_cast<std::uint64_t>(read_int(payload, info.id))] =
        read_string(payload, info.qualname);
}

void ExpandIterator::on_horizon(const bt_event* event, const EventInfo& info, std::int64_t time)
{
    const bt_field* payload = bt_event_borrow_payload_field_const(event);
    const std::int64_t pid = read_int(payload, info.pid);
    m_has_horizon = true;
    if (info.is_final.index >= 0 && read_int(payload, info.is_final) != 0)
        m_horizons.erase(pid);
    else
        m_horizons[pid] = time;
}

MessageRef ExpandIterator::discarded(const bt_stream* stream, const Target& target,
                                     std::uint64_t count, std::uint64_t begin, std::uint64_t end,
                                     const char* why)
{
    if (!target.has_discarded || !m_settings.report_discarded) {
        m_diagnostics.not_reported(count, why, stream, m_settings.report_discarded);
        return MessageRef();
    }
    bt_message* created = target.has_discarded_clock
                              ? bt_message_discarded_events_create_with_default_clock_snapshots(
                                    m_self, stream, begin, std::max(begin, end))
                              : bt_message_discarded_events_create(m_self, stream);
    MessageRef message(check_new(created, "Cannot create a discarded-events message"));
    bt_message_discarded_events_set_count(created, count);
    return message;
}

void ExpandIterator::on_batch(MessageRef message, const EventInfo& info, std::int64_t time,
                              std::uint64_t index)
{
    const bt_event* event = bt_message_event_borrow_event_const(message.get());
    const bt_stream* stream = bt_event_borrow_stream_const(event);
    const Target& target = m_classes.target_of(bt_stream_borrow_class_const(stream));
    const bt_field* payload = bt_event_borrow_payload_field_const(event);
    const BatchHeader header = read_header(payload, info);
    auto run = std::make_unique<Run>();
    read_bytes(member_field(payload, info.records.index), run->bytes);
    const std::string fault = check_records(header, run->bytes.data(), run->bytes.size());
    run->target = &target;
    run->reader = RecordReader(header, run->bytes.data(), run->bytes.size());
    const bool has_records = fault.empty() && run->advance();
    const Clock& clock = *target.clock;
    const std::uint64_t released_value = clock.value_of_time(m_granted);
    ThreadState& thread = follow_thread(
        header, stream, target,
        has_records ? run->current.value : clock.value_of_ns(header.begin_ns), released_value);

    if (!fault.empty()) {
        m_diagnostics.malformed(fault, stream, index, header);
        const std::uint64_t begin = std::max(clock.value_of_ns(header.begin_ns), released_value);
        if (MessageRef skipped = discarded(stream, target, header.count, begin,
                                           clock.value_of_ns(header.end_ns), "malformed"))
            wait_discarded(std::move(skipped), stream, target, begin);
        return;
    }
    if (!has_records || !skip_late(*run, message.get(), time, stream, header))
        return;
    run->stream = stream;
    run->context = context_for(thread, message.get(), target);
    run->pid = header.pid;
    run->tid = header.tid;
    m_queue.push(std::move(run));
}

ThreadState& ExpandIterator::follow_thread(const BatchHeader& header, const bt_stream* stream,
                                           const Target& target, std::uint64_t first_value,
                                           std::uint64_t released_value)
{
    // Records the tracer lost: a gap in the thread's sequence. A smaller first
    // than expected is a new thread with a reused tid (or a forked child): its
    // count starts afresh.
    const auto [thread, is_new_thread] = m_threads.try_emplace({header.pid, header.tid});
    if (!is_new_thread && header.first > thread->second.next_first) {
        const std::uint64_t lost = header.first - thread->second.next_first;
        m_diagnostics.lost(lost);
        const std::uint64_t begin =
            std::max(target.clock->value_of_ns(thread->second.end_ns), released_value);
        if (MessageRef gap = discarded(stream, target, lost, begin, first_value, "lost"))
            wait_discarded(std::move(gap), stream, target, begin);
    }
    thread->second.next_first = header.first + header.count;
    thread->second.end_ns = header.end_ns;
    return thread->second;
}

bool ExpandIterator::skip_late(Run& run, const bt_message* batch, std::int64_t time,
                               const bt_stream* stream, const BatchHeader& header)
{
    // Records for a time already released cannot be put in order: they are
    // reported at the batch's place instead. Times only grow within a batch, so
    // they are its first ones.
    bool is_left = true;
    std::uint64_t late_count = 0;
    while (is_left && run.current.time < m_granted) {
        ++late_count;
        is_left = run.advance();
    }
    if (late_count != 0) {
        m_diagnostics.late(late_count, header.pid, header.tid, m_has_horizon);
        const std::uint64_t at = bt_clock_snapshot_get_value(
            bt_message_event_borrow_default_clock_snapshot_const(batch));
        if (MessageRef skipped = discarded(stream, *run.target, late_count, at, at, "late"))
            wait(std::move(skipped), time);
    }
    return is_left;
}

void ExpandIterator::wait_discarded(MessageRef message, const bt_stream* stream,
                                    const Target& target, std::uint64_t begin)
{
    auto single = std::make_unique<Run>();
    single->single = std::move(message);
    single->single_time = std::max(target.clock->time_of(begin), m_granted);
    single->stream = stream;
    m_queue.push(std::move(single));
}

std::shared_ptr<const ContextSource>
ExpandIterator::context_for(ThreadState& thread, const bt_message* batch, const Target& target)
{
    const bt_event* event = bt_message_event_borrow_event_const(batch);
    const bt_stream* stream = bt_event_borrow_stream_const(event);
    const bt_field* context = bt_event_borrow_common_context_field_const(event);
    if (std::shared_ptr<const ContextSource> held = thread.context.lock()) {
        const bt_event* held_event = bt_message_event_borrow_event_const(held->message.get());
        if (bt_event_borrow_stream_const(held_event) == stream &&
            (!context ||
             same_value(bt_event_borrow_common_context_field_const(held_event), context)))
            return held;
    }
    const std::uint64_t value =
        bt_clock_snapshot_get_value(bt_message_event_borrow_default_clock_snapshot_const(batch));
    bt_message* created = create_event(m_self, target, target.ret,
                                       bt_event_borrow_packet_const(event), stream, value);
    auto source = std::make_shared<ContextSource>();
    source->message.reset(check_new(created, "Cannot create a context message"));
    if (context)
        copy_field(bt_event_borrow_common_context_field(bt_message_event_borrow_event(created)),
                   context);
    thread.context = source;
    return source;
}

} // namespace pyust::plugin::expand
