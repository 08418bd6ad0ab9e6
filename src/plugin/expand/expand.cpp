// filter.pyust.expand (see expand.hpp): the message iterator and its bridges.
//
// Messages flow in three stages. Arrival (arrive): each upstream message gets
// its time (its default clock snapshot, else the time of the message before it)
// and an arrival number; a python:batch is decoded into a run of records,
// python:code names ids, python:horizon moves its process's horizon. Waiting:
// forwarded messages wait in a FIFO (they arrive in time order), runs in a heap
// keyed by their next record. Release (release): everything up to the smallest
// horizon of the fast-mode processes goes out in (time, arrival) order; records
// become event messages only then, in the packet open at that point of the
// output.
#include "expand.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bt_util.hpp"
#include "event_reader.hpp"
#include "fields.hpp"
#include "filter_util.hpp"
#include "params.hpp"
#include "records.hpp"

namespace pyust::plugin::expand {

namespace {

constexpr std::int64_t forever = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t never = std::numeric_limits<std::int64_t>::min();
constexpr std::uint64_t ns_per_second = 1000000000;

using PacketRef = Ref<const bt_packet, bt_packet_put_ref>;
__extension__ typedef unsigned __int128 Wide;

struct Settings {
    std::int64_t max_delay = 5 * static_cast<std::int64_t>(ns_per_second);
    // Once the trace has shown a batch or a horizon, every message waits this
    // long at least: a process whose first horizons are not in the trace (a
    // snapshot, a flight recorder, rotated files) still gets its later batches
    // in order. The hook writes a thread's records within 20 ms (more only
    // when the GIL is held that long), so 200 ms leaves room.
    std::int64_t lookahead = 200 * static_cast<std::int64_t>(ns_per_second / 1000);
    // false: missing records go to standard error only (sink.ctf.fs of
    // babeltrace 2.0 refuses discarded-events messages inside a packet).
    bool report_discarded = true;
};

// What the filter reads of an upstream event class.
enum class Role : std::uint8_t { other, code, batch, horizon };

struct EventInfo {
    Role role = Role::other;
    FieldMember id, qualname; // code
    FieldMember pid, tid, first, count, id_high, begin_tsc, begin_ns, end_tsc,
        end_ns;           // batch
    FieldMember records;  // batch
    FieldMember is_final; // horizon (and pid)
};

// A stream class's default clock: LTTng's counts ns (frequency 1e9), so a
// record's time in ns is its clock value; other frequencies are converted.
class Clock {
public:
    // Precondition: clock_class is not null. Throws Error when cycle 0 has no ns
    // from origin.
    explicit Clock(const bt_clock_class* clock_class) : m_class(clock_class)
    {
        m_frequency = bt_clock_class_get_frequency(clock_class);
        if (bt_clock_class_cycles_to_ns_from_origin(clock_class, 0, &m_origin) !=
            BT_CLOCK_CLASS_CYCLES_TO_NS_FROM_ORIGIN_STATUS_OK) {
            bt_current_thread_clear_error();
            throw Error("Cannot use the stream's clock: reason=its offset overflows");
        }
    }
    // The clock value of a time in ns on LTTng's clock. noexcept.
    std::uint64_t value_of_ns(std::uint64_t ns) const noexcept
    {
        if (m_frequency == ns_per_second)
            return ns;
        return static_cast<std::uint64_t>(static_cast<Wide>(ns) * m_frequency / ns_per_second);
    }
    // ns from the origin of a clock value. Throws Error on overflow.
    std::int64_t time_of(std::uint64_t value) const
    {
        if (m_frequency == ns_per_second && value <= static_cast<std::uint64_t>(forever) &&
            static_cast<std::int64_t>(value) <= forever - std::max<std::int64_t>(m_origin, 0))
            return m_origin + static_cast<std::int64_t>(value);
        std::int64_t time = 0;
        if (bt_clock_class_cycles_to_ns_from_origin(m_class, value, &time) !=
            BT_CLOCK_CLASS_CYCLES_TO_NS_FROM_ORIGIN_STATUS_OK) {
            bt_current_thread_clear_error();
            throw Error("Cannot place a record in time: reason=its time overflows, value=" +
                        std::to_string(value));
        }
        return time;
    }
    // The clock value of a time in ns from the origin (0 for a time before cycle
    // 0). noexcept.
    std::uint64_t value_of_time(std::int64_t time) const noexcept
    {
        if (time <= m_origin)
            return 0;
        const Wide since = static_cast<Wide>(static_cast<std::uint64_t>(time - m_origin));
        return static_cast<std::uint64_t>(since * m_frequency / ns_per_second);
    }

private:
    const bt_clock_class* m_class;
    std::uint64_t m_frequency = ns_per_second;
    std::int64_t m_origin = 0;
};

// What the filter makes the records of one upstream stream class into.
struct Target {
    const bt_event_class* call = nullptr;
    const bt_event_class* ret = nullptr;
    const bt_event_class* line = nullptr;
    FieldMember call_id, call_name, ret_id, ret_unwind, line_id, line_line;
    FieldMember vpid, vtid; // in the common context
    std::unique_ptr<Clock> clock;
    bool has_packets = false;
    bool has_discarded = false;
    bool has_discarded_clock = false;
};

struct StreamState {
    std::uint64_t events = 0; // events arrived on the stream so far
    bool is_active = false;   // in output order: begun and not ended
    PacketRef packet;         // in output order: the open packet, if any
};

// A forwarded message waiting for release.
struct Pending {
    std::int64_t time;
    std::uint64_t arrival;
    const bt_message* message; // owned
};

// The records of one batch still to release, or one message of ours (a
// discarded-events message) that waits for its time.
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
    // Throws Error when its time overflows.
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
bool is_later(const std::unique_ptr<Run>& a, const std::unique_ptr<Run>& b) noexcept
{
    const std::int64_t ta = a->time();
    const std::int64_t tb = b->time();
    return ta != tb ? ta > tb : a->arrival > b->arrival;
}

struct ThreadKeyHash {
    std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& key) const noexcept
    {
        return std::hash<std::int64_t>()(key.first * 1000003 ^ key.second);
    }
};

struct ThreadState {
    std::uint64_t next_first = 0;               // the previous batch's first + count
    std::uint64_t end_ns = 0;                   // the previous batch's end_ns
    std::weak_ptr<const ContextSource> context; // of its latest waiting run
};

// Sets an integer field from a value, whatever its signedness. noexcept.
void set_int(bt_field* field, std::int64_t value) noexcept
{
    if (bt_field_class_type_is(bt_field_get_class_type(field), BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
        bt_field_integer_signed_set_value(field, value);
    else
        bt_field_integer_unsigned_set_value(field, static_cast<std::uint64_t>(value));
}

bt_field* member_of(bt_field* structure, const FieldMember& member) noexcept
{
    return bt_field_structure_borrow_member_field_by_index(
        structure, static_cast<std::uint64_t>(member.index));
}

// Copies the value of src into dst, a field of the same class. Throws BtError,
// std::bad_alloc.
void copy_field(bt_field* dst, const bt_field* src)
{
    const bt_field_class_type type = bt_field_get_class_type(src);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BOOL)) {
        bt_field_bool_set_value(dst, bt_field_bool_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BIT_ARRAY)) {
        bt_field_bit_array_set_value_as_integer(dst, bt_field_bit_array_get_value_as_integer(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
        bt_field_integer_signed_set_value(dst, bt_field_integer_signed_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
        bt_field_integer_unsigned_set_value(dst, bt_field_integer_unsigned_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL)) {
        bt_field_real_single_precision_set_value(dst,
                                                 bt_field_real_single_precision_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL)) {
        bt_field_real_double_precision_set_value(dst,
                                                 bt_field_real_double_precision_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRING)) {
        check(bt_field_string_set_value(dst, bt_field_string_get_value(src)),
              "Cannot copy a string field");
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRUCTURE)) {
        const std::uint64_t count =
            bt_field_class_structure_get_member_count(bt_field_borrow_class_const(src));
        for (std::uint64_t i = 0; i < count; ++i)
            copy_field(bt_field_structure_borrow_member_field_by_index(dst, i),
                       bt_field_structure_borrow_member_field_by_index_const(src, i));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_ARRAY)) {
        const std::uint64_t length = bt_field_array_get_length(src);
        if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY))
            check(bt_field_array_dynamic_set_length(dst, length),
                  "Cannot copy a dynamic array field");
        for (std::uint64_t i = 0; i < length; ++i)
            copy_field(bt_field_array_borrow_element_field_by_index(dst, i),
                       bt_field_array_borrow_element_field_by_index_const(src, i));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_OPTION)) {
        const bt_field* inner = bt_field_option_borrow_field_const(src);
        bt_field_option_set_has_field(dst, inner != nullptr);
        if (inner)
            copy_field(bt_field_option_borrow_field(dst), inner);
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_VARIANT)) {
        check(bt_field_variant_select_option_by_index(
                  dst, bt_field_variant_get_selected_option_index(src)),
              "Cannot copy a variant field");
        copy_field(bt_field_variant_borrow_selected_option_field(dst),
                   bt_field_variant_borrow_selected_option_field_const(src));
    }
}

// Whether two fields of the same class hold the same value. noexcept.
bool same_value(const bt_field* a, const bt_field* b) noexcept
{
    const bt_field_class_type type = bt_field_get_class_type(a);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BOOL))
        return bt_field_bool_get_value(a) == bt_field_bool_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BIT_ARRAY))
        return bt_field_bit_array_get_value_as_integer(a) ==
               bt_field_bit_array_get_value_as_integer(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
        return bt_field_integer_signed_get_value(a) == bt_field_integer_signed_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
        return bt_field_integer_unsigned_get_value(a) == bt_field_integer_unsigned_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL))
        return bt_field_real_single_precision_get_value(a) ==
               bt_field_real_single_precision_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL))
        return bt_field_real_double_precision_get_value(a) ==
               bt_field_real_double_precision_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRING))
        return bt_field_string_get_length(a) == bt_field_string_get_length(b) &&
               std::string_view(bt_field_string_get_value(a)) == bt_field_string_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRUCTURE)) {
        const std::uint64_t count =
            bt_field_class_structure_get_member_count(bt_field_borrow_class_const(a));
        for (std::uint64_t i = 0; i < count; ++i)
            if (!same_value(bt_field_structure_borrow_member_field_by_index_const(a, i),
                            bt_field_structure_borrow_member_field_by_index_const(b, i)))
                return false;
        return true;
    }
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_ARRAY)) {
        const std::uint64_t length = bt_field_array_get_length(a);
        if (bt_field_array_get_length(b) != length)
            return false;
        for (std::uint64_t i = 0; i < length; ++i)
            if (!same_value(bt_field_array_borrow_element_field_by_index_const(a, i),
                            bt_field_array_borrow_element_field_by_index_const(b, i)))
                return false;
        return true;
    }
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_OPTION)) {
        const bt_field* inner_a = bt_field_option_borrow_field_const(a);
        const bt_field* inner_b = bt_field_option_borrow_field_const(b);
        return inner_a && inner_b ? same_value(inner_a, inner_b) : inner_a == inner_b;
    }
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_VARIANT))
        return bt_field_variant_get_selected_option_index(a) ==
                   bt_field_variant_get_selected_option_index(b) &&
               same_value(bt_field_variant_borrow_selected_option_field_const(a),
                          bt_field_variant_borrow_selected_option_field_const(b));
    return true; // no other field class holds a value
}

// The time of a message in ns from its clock's origin, or fallback when it has
// no clock snapshot. Throws Error on overflow.
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

class ExpandIterator {
public:
    // Creates the upstream iterator. Throws BtError, std::bad_alloc.
    ExpandIterator(bt_self_message_iterator* self, const Settings& settings);
    ~ExpandIterator();

    // Fills messages with up to capacity messages. Throws Error, BtError,
    // std::bad_alloc.
    bt_message_iterator_class_next_method_status next(bt_message_array_const messages,
                                                      std::uint64_t capacity, std::uint64_t* count);

private:
    void arrive(MessageRef message);
    void wait(MessageRef message, std::int64_t time);
    const EventInfo& info_of(const bt_event_class* event_class);
    const Target& target_of(const bt_stream_class* stream_class);
    // The state of a stream, created on first sight. Throws std::bad_alloc.
    StreamState& stream_state(const bt_stream* stream);
    // The state of a stream, or null when it is unknown or has ended. noexcept.
    const StreamState* find_state(const bt_stream* stream) const noexcept
    {
        const auto it = m_streams.find(stream);
        return it == m_streams.end() ? nullptr : &it->second;
    }
    void on_code(const bt_event* event, const EventInfo& info);
    void on_horizon(const bt_event* event, const EventInfo& info, std::int64_t time);
    void on_batch(MessageRef message, const EventInfo& info, std::int64_t time,
                  std::uint64_t index);
    // A discarded-events message of ours for count records on stream, or null
    // (and a line on standard error) when its stream class has no discarded
    // events.
    MessageRef discarded(const bt_stream* stream, const Target& target, std::uint64_t count,
                         std::uint64_t begin, std::uint64_t end, const char* why);
    void wait_run(std::unique_ptr<Run> run);
    // The context source for the records of batch, a python:batch message of thread: the
    // thread's latest one when it is on the same stream with the same common context, else
    // a new one. Throws BtError, std::bad_alloc.
    std::shared_ptr<const ContextSource> context_for(ThreadState& thread, const bt_message* batch,
                                                     const Target& target);
    // The time up to which messages may go: the smallest horizon of the fast-mode processes
    // that still hold the queue (forever when none does). Warns once about a stale process.
    std::int64_t limit();
    // Updates m_limit and m_granted after an arrival. Throws nothing but std::bad_alloc.
    void grant();
    // Releases up to budget messages (up to m_limit) into the output, in (time, arrival)
    // order. Throws Error, BtError, std::bad_alloc.
    void release(std::uint64_t budget);
    void emit(const bt_message* message);
    void emit_record(const Run& run, const Record& record);
    // A new event message of event_class at clock value, in packet (or on stream when its class
    // has no packets), or null. noexcept.
    bt_message* create_event(const Target& target, const bt_event_class* event_class,
                             const bt_packet* packet, const bt_stream* stream,
                             std::uint64_t value) noexcept
    {
        return target.has_packets ? bt_message_event_create_with_packet_and_default_clock_snapshot(
                                        m_self, event_class, packet, value)
                                  : bt_message_event_create_with_default_clock_snapshot(
                                        m_self, event_class, stream, value);
    }
    const bt_packet* packet_for(const bt_stream* stream, const bt_stream** placed);
    void summarize() const;

    bt_self_message_iterator* m_self;
    Settings m_settings;
    MessageIteratorRef m_upstream;
    bool m_is_upstream_ended = false;
    bool m_is_flushed = false;
    // Upstream failed: its error, returned once the held messages are out.
    std::unique_ptr<const bt_error, decltype(&bt_error_release)> m_upstream_error{nullptr,
                                                                                  bt_error_release};

    std::deque<const bt_message*> m_output;   // owned, released, in output order
    std::deque<Pending> m_pending;            // forwarded messages waiting, in arrival order
    std::vector<std::unique_ptr<Run>> m_runs; // a heap (is_later)
    std::uint64_t m_arrivals = 0;
    std::int64_t m_latest = never;  // time of the latest message arrived
    std::int64_t m_limit = forever; // messages up to this time may be released
    // The latest time granted for release so far: a record before it is late (whether or not
    // the downstream has taken the messages around it yet, so that the verdict depends on the
    // trace alone).
    std::int64_t m_granted = never;

    std::unordered_map<std::int64_t, std::int64_t> m_horizons; // fast process -> horizon
    bool m_has_horizon = false;
    // A batch or a horizon came: the trace holds fast-mode records. (Not what
    // the metadata declares: LTTng declares python:batch in every trace of
    // pyust's provider, and a standard trace must not wait.)
    bool m_has_batch_class = false;
    std::unordered_map<std::uint64_t, std::string> m_names; // code id -> qualname
    std::unordered_map<std::pair<std::int64_t, std::int64_t>, ThreadState, ThreadKeyHash> m_threads;
    std::unordered_map<const bt_event_class*, EventInfo> m_infos;
    const bt_event_class* m_last_class = nullptr;
    const EventInfo* m_last_info = nullptr;
    std::unordered_map<const bt_stream_class*, Target> m_targets;
    std::unordered_map<const bt_stream*, StreamState> m_streams;
    const bt_stream* m_last_stream = nullptr;
    StreamState* m_last_state = nullptr;

    // What went missing, for the summary at the end.
    std::uint64_t m_lost_records = 0;
    std::uint64_t m_malformed_batches = 0;
    std::uint64_t m_malformed_records = 0;
    std::uint64_t m_late_records = 0;
    std::uint64_t m_unplaced_records = 0;
    bool m_warned_stale = false;
    bool m_warned_malformed = false;
    bool m_warned_late = false;
    bool m_warned_unplaced = false;
    bool m_warned_no_discarded = false;
};

ExpandIterator::ExpandIterator(bt_self_message_iterator* self, const Settings& settings)
    : m_self(self), m_settings(settings), m_upstream(create_upstream(self))
{
}

ExpandIterator::~ExpandIterator()
{
    for (const bt_message* message : m_output)
        bt_message_put_ref(message);
    for (const Pending& pending : m_pending)
        bt_message_put_ref(pending.message);
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
                summarize();
            m_is_flushed = true;
            if (m_upstream_error) {
                // Everything held is out: now upstream's error, with its causes.
                bt_current_thread_move_error(m_upstream_error.release());
                throw BtError("Cannot get messages from upstream: port=in", false);
            }
            return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
        }
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
            return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_AGAIN;
        case Pulled::end:
            m_is_upstream_ended = true;
            m_limit = forever;
            break;
        }
    }
    std::uint64_t n = 0;
    while (n < capacity && !m_output.empty()) {
        messages[n++] = m_output.front();
        m_output.pop_front();
    }
    *count = n;
    return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
}

void ExpandIterator::arrive(MessageRef message)
{
    const std::int64_t time = std::max(m_latest, time_of(message.get(), m_latest));
    m_latest = time;
    if (bt_message_get_type(message.get()) == BT_MESSAGE_TYPE_EVENT) {
        const bt_event* event = bt_message_event_borrow_event_const(message.get());
        const EventInfo& info = info_of(bt_event_borrow_class_const(event));
        const std::uint64_t index = stream_state(bt_event_borrow_stream_const(event)).events++;
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
    if (!m_has_batch_class && m_horizons.empty() && m_pending.empty() && m_runs.empty()) {
        // Nothing holds the queue (no process in fast mode): straight out.
        m_granted = std::max(m_granted, time);
        emit(message.release());
        return;
    }
    m_pending.push_back(Pending{time, m_arrivals++, message.get()});
    message.release();
}

const EventInfo& ExpandIterator::info_of(const bt_event_class* event_class)
{
    if (event_class == m_last_class)
        return *m_last_info;
    auto [it, is_new] = m_infos.try_emplace(event_class);
    EventInfo& info = it->second;
    if (is_new) {
        const char* name = bt_event_class_get_name(event_class);
        const std::string_view event_name = name ? name : "";
        const bt_field_class* payload =
            bt_event_class_borrow_payload_field_class_const(event_class);
        if (event_name == "python:code") {
            info.id = find_member(payload, "id");
            info.qualname = find_member(payload, "qualname");
            if (info.id.index >= 0 && info.qualname.index >= 0)
                info.role = Role::code;
        } else if (event_name == "python:horizon") {
            info.pid = find_member(payload, "pid");
            info.is_final = find_member(payload, "final");
            if (info.pid.index >= 0)
                info.role = Role::horizon;
        } else if (event_name == "python:batch") {
            static constexpr struct {
                FieldMember EventInfo::*member;
                const char* name;
            } members[] = {
                {&EventInfo::pid, "pid"},           {&EventInfo::tid, "tid"},
                {&EventInfo::first, "first"},       {&EventInfo::count, "count"},
                {&EventInfo::id_high, "id_high"},   {&EventInfo::begin_tsc, "begin_tsc"},
                {&EventInfo::begin_ns, "begin_ns"}, {&EventInfo::end_tsc, "end_tsc"},
                {&EventInfo::end_ns, "end_ns"},     {&EventInfo::records, "records"},
            };
            for (const auto& entry : members) {
                info.*entry.member = find_member(payload, entry.name);
                if ((info.*entry.member).index < 0) {
                    m_infos.erase(it);
                    throw Error(std::string("Cannot expand python:batch: reason=its payload "
                                            "has no field ") +
                                entry.name + " (not pyust's event model?)");
                }
            }
            info.role = Role::batch;
        }
    }
    m_last_class = event_class;
    m_last_info = &info;
    return info;
}

const Target& ExpandIterator::target_of(const bt_stream_class* stream_class)
{
    const auto found = m_targets.find(stream_class);
    if (found != m_targets.end())
        return found->second;
    Target target;
    const char* stream_class_name = bt_stream_class_get_name(stream_class);
    const std::string where =
        stream_class_name
            ? std::string(", stream class=") + stream_class_name
            : ", stream class id=" + std::to_string(bt_stream_class_get_id(stream_class));
    const std::uint64_t count = bt_stream_class_get_event_class_count(stream_class);
    for (std::uint64_t i = 0; i < count; ++i) {
        const bt_event_class* event_class =
            bt_stream_class_borrow_event_class_by_index_const(stream_class, i);
        const char* name = bt_event_class_get_name(event_class);
        if (!name)
            continue;
        const std::string_view event_name = name;
        if (event_name == "python:call")
            target.call = event_class;
        else if (event_name == "python:return")
            target.ret = event_class;
        else if (event_name == "python:line")
            target.line = event_class;
    }
    for (const auto& [event_class, name] :
         {std::pair{target.call, "python:call"}, std::pair{target.ret, "python:return"},
          std::pair{target.line, "python:line"}}) {
        if (!event_class)
            throw Error(std::string("Cannot expand python:batch: reason=the trace declares "
                                    "python:batch but not ") +
                        name +
                        ", fix=enable python:* (lttng enable-event -u 'python:*') in the "
                        "recording session" +
                        where);
    }
    const auto payload = [](const bt_event_class* event_class) {
        return bt_event_class_borrow_payload_field_class_const(event_class);
    };
    target.call_id = find_member(payload(target.call), "id");
    target.call_name = find_member(payload(target.call), "name");
    target.ret_id = find_member(payload(target.ret), "id");
    target.ret_unwind = find_member(payload(target.ret), "unwind");
    target.line_id = find_member(payload(target.line), "id");
    target.line_line = find_member(payload(target.line), "line");
    if (target.call_id.index < 0 || target.call_name.index < 0 || target.ret_id.index < 0 ||
        target.ret_unwind.index < 0 || target.line_id.index < 0 || target.line_line.index < 0)
        throw Error("Cannot expand python:batch: reason=python:call, python:return or "
                    "python:line lacks a payload field (not pyust's event model?)" +
                    where);
    const bt_field_class* common =
        bt_stream_class_borrow_event_common_context_field_class_const(stream_class);
    target.vpid = find_member(common, "vpid");
    target.vtid = find_member(common, "vtid");
    const bt_clock_class* clock_class =
        bt_stream_class_borrow_default_clock_class_const(stream_class);
    if (!clock_class)
        throw Error("Cannot expand python:batch: reason=its stream class has no clock" + where);
    target.clock = std::make_unique<Clock>(clock_class);
    target.has_packets = bt_stream_class_supports_packets(stream_class);
    target.has_discarded = bt_stream_class_supports_discarded_events(stream_class);
    target.has_discarded_clock =
        bt_stream_class_discarded_events_have_default_clock_snapshots(stream_class);
    return m_targets.emplace(stream_class, std::move(target)).first->second;
}

StreamState& ExpandIterator::stream_state(const bt_stream* stream)
{
    if (stream != m_last_stream) {
        m_last_state = &m_streams[stream];
        m_last_stream = stream;
    }
    return *m_last_state;
}

// A readable name of a stream, for messages.
std::string stream_name(const bt_stream* stream)
{
    const char* name = bt_stream_get_name(stream);
    return name ? name : "id " + std::to_string(bt_stream_get_id(stream));
}

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
        if (!m_warned_no_discarded)
            std::fprintf(stderr,
                         "filter.pyust.expand: %llu %s records on stream %s are not reported "
                         "as "
                         "discarded events (%s); further ones are counted at the end\n",
                         static_cast<unsigned long long>(count), why, stream_name(stream).c_str(),
                         m_settings.report_discarded ? "its stream class has none"
                                                     : "report-discarded=no");
        m_warned_no_discarded = true;
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
    const Target& target = target_of(bt_stream_borrow_class_const(stream));
    const bt_field* payload = bt_event_borrow_payload_field_const(event);
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
    const bt_field* bytes = member_field(payload, info.records.index);
    const std::uint64_t size = bt_field_array_get_length(bytes);
    auto run = std::make_unique<Run>();
    run->bytes.resize(size);
    for (std::uint64_t i = 0; i < size; ++i)
        run->bytes[i] = static_cast<std::uint8_t>(bt_field_integer_unsigned_get_value(
            bt_field_array_borrow_element_field_by_index_const(bytes, i)));
    const std::string fault = check_records(header, run->bytes.data(), run->bytes.size());
    run->target = &target;
    run->reader = RecordReader(header, run->bytes.data(), run->bytes.size());
    const bool has_records = fault.empty() && run->advance();
    const Clock& clock = *target.clock;
    const std::uint64_t released_value = clock.value_of_time(m_granted);

    // Records the tracer lost: a gap in the thread's sequence. A smaller first
    // than expected is a new thread with a reused tid (or a forked child): its
    // count starts afresh.
    const auto [thread, is_new_thread] = m_threads.try_emplace({header.pid, header.tid});
    if (!is_new_thread && header.first > thread->second.next_first) {
        const std::uint64_t lost = header.first - thread->second.next_first;
        m_lost_records += lost;
        const std::uint64_t begin =
            std::max(clock.value_of_ns(thread->second.end_ns), released_value);
        const std::uint64_t end =
            has_records ? run->current.value : clock.value_of_ns(header.begin_ns);
        if (MessageRef gap = discarded(stream, target, lost, begin, end, "lost")) {
            auto single = std::make_unique<Run>();
            single->single = std::move(gap);
            single->single_time = std::max(clock.time_of(begin), m_granted);
            single->stream = stream;
            wait_run(std::move(single));
        }
    }
    thread->second.next_first = header.first + header.count;
    thread->second.end_ns = header.end_ns;

    if (!fault.empty()) {
        ++m_malformed_batches;
        m_malformed_records += header.count;
        if (!m_warned_malformed)
            std::fprintf(stderr,
                         "filter.pyust.expand: skipping a malformed python:batch (%s): "
                         "stream=%s, "
                         "event index=%llu, pid=%lld, tid=%lld, count=%u; its records are "
                         "reported as discarded events (further ones are counted at the "
                         "end)\n",
                         fault.c_str(), stream_name(stream).c_str(),
                         static_cast<unsigned long long>(index), static_cast<long long>(header.pid),
                         static_cast<long long>(header.tid), header.count);
        m_warned_malformed = true;
        const std::uint64_t begin = std::max(clock.value_of_ns(header.begin_ns), released_value);
        if (MessageRef skipped = discarded(stream, target, header.count, begin,
                                           clock.value_of_ns(header.end_ns), "malformed")) {
            auto single = std::make_unique<Run>();
            single->single = std::move(skipped);
            single->single_time = std::max(clock.time_of(begin), m_granted);
            single->stream = stream;
            wait_run(std::move(single));
        }
        return;
    }

    // Records for a time already released cannot be put in order: they are
    // reported at the batch's place instead. Times only grow within a batch, so
    // they are its first ones.
    bool is_left = has_records;
    std::uint64_t late_count = 0;
    while (is_left && run->current.time < m_granted) {
        ++late_count;
        is_left = run->advance();
    }
    if (late_count != 0) {
        m_late_records += late_count;
        if (!m_warned_late)
            std::fprintf(stderr,
                         "filter.pyust.expand: %llu records of pid %lld, tid %lld came after "
                         "their time was released (%s); they are reported as discarded events "
                         "(further ones are counted at the end)\n",
                         static_cast<unsigned long long>(late_count),
                         static_cast<long long>(header.pid), static_cast<long long>(header.tid),
                         m_has_horizon ? "the process's horizon lagged by more than max-delay"
                                       : "the trace has no python:horizon event: enable "
                                         "python:*");
        m_warned_late = true;
        const std::uint64_t at = bt_clock_snapshot_get_value(
            bt_message_event_borrow_default_clock_snapshot_const(message.get()));
        if (MessageRef skipped = discarded(stream, target, late_count, at, at, "late"))
            wait(std::move(skipped), time);
    }
    if (!is_left)
        return;
    run->stream = stream;
    run->context = context_for(thread->second, message.get(), target);
    run->pid = header.pid;
    run->tid = header.tid;
    wait_run(std::move(run));
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
    bt_message* created =
        create_event(target, target.ret, bt_event_borrow_packet_const(event), stream, value);
    auto source = std::make_shared<ContextSource>();
    source->message.reset(check_new(created, "Cannot create a context message"));
    if (context)
        copy_field(bt_event_borrow_common_context_field(bt_message_event_borrow_event(created)),
                   context);
    thread.context = source;
    return source;
}

void ExpandIterator::wait_run(std::unique_ptr<Run> run)
{
    run->arrival = m_arrivals++;
    m_runs.push_back(std::move(run));
    std::push_heap(m_runs.begin(), m_runs.end(), is_later);
}

std::int64_t ExpandIterator::limit()
{
    std::int64_t result = forever;
    if (m_has_batch_class)
        result = m_latest > never + m_settings.lookahead ? m_latest - m_settings.lookahead : never;
    for (const auto& [pid, horizon] : m_horizons) {
        if (m_latest - horizon > m_settings.max_delay) {
            if (!m_warned_stale)
                std::fprintf(stderr,
                             "filter.pyust.expand: the horizon of pid %lld lags the trace by "
                             "more than max-delay (%lld ns): its later records may be reported "
                             "as discarded instead of put in order\n",
                             static_cast<long long>(pid),
                             static_cast<long long>(m_settings.max_delay));
            m_warned_stale = true;
            continue;
        }
        result = std::min(result, horizon);
    }
    return result;
}

void ExpandIterator::grant()
{
    if (!m_is_upstream_ended)
        m_limit = limit();
    m_granted = std::max(m_granted, std::min(m_limit, m_latest));
}

void ExpandIterator::release(std::uint64_t budget)
{
    const std::size_t stop = m_output.size() + budget;
    while (m_output.size() < stop) {
        const bool is_pending = !m_pending.empty() && m_pending.front().time <= m_limit;
        const bool is_run = !m_runs.empty() && m_runs.front()->time() <= m_limit;
        if (!is_pending && !is_run)
            return;
        if (is_pending && (!is_run || m_pending.front().time < m_runs.front()->time() ||
                           (m_pending.front().time == m_runs.front()->time() &&
                            m_pending.front().arrival < m_runs.front()->arrival))) {
            const Pending pending = m_pending.front();
            m_pending.pop_front();
            emit(pending.message);
            continue;
        }
        std::pop_heap(m_runs.begin(), m_runs.end(), is_later);
        Run& run = *m_runs.back();
        if (run.single) {
            if (const StreamState* state = find_state(run.stream); state && state->is_active) {
                emit(run.single.release());
            } else {
                std::fprintf(stderr,
                             "filter.pyust.expand: a discarded-events report of stream "
                             "%s is dropped: the stream is not open at its time\n",
                             stream_name(run.stream).c_str());
            }
            m_runs.pop_back();
            continue;
        }
        emit_record(run, run.current);
        if (!run.advance())
            m_runs.pop_back();
        else
            std::push_heap(m_runs.begin(), m_runs.end(), is_later);
    }
}

void ExpandIterator::emit(const bt_message* message)
{
    MessageRef owned(const_cast<bt_message*>(message));
    switch (bt_message_get_type(message)) {
    case BT_MESSAGE_TYPE_STREAM_BEGINNING:
        stream_state(bt_message_stream_beginning_borrow_stream_const(message)).is_active = true;
        break;
    case BT_MESSAGE_TYPE_STREAM_END:
        m_streams.erase(bt_message_stream_end_borrow_stream_const(message));
        m_last_stream = nullptr;
        break;
    case BT_MESSAGE_TYPE_PACKET_BEGINNING: {
        const bt_packet* packet = bt_message_packet_beginning_borrow_packet_const(message);
        bt_packet_get_ref(packet);
        stream_state(bt_packet_borrow_stream_const(packet)).packet.reset(packet);
        break;
    }
    case BT_MESSAGE_TYPE_PACKET_END:
        stream_state(
            bt_packet_borrow_stream_const(bt_message_packet_end_borrow_packet_const(message)))
            .packet.reset();
        break;
    default:
        break;
    }
    m_output.push_back(owned.get());
    owned.release();
}

const bt_packet* ExpandIterator::packet_for(const bt_stream* stream, const bt_stream** placed)
{
    // The batch's stream if it is open at this point of the output, else another
    // stream of the same class in the same trace.
    const bt_stream_class* stream_class = bt_stream_borrow_class_const(stream);
    const bool has_packets = bt_stream_class_supports_packets(stream_class);
    if (const StreamState* own = find_state(stream);
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

void ExpandIterator::emit_record(const Run& run, const Record& record)
{
    const Target& target = *run.target;
    const bt_stream* stream = nullptr;
    const bt_packet* packet = packet_for(run.stream, &stream);
    if (!stream) {
        ++m_unplaced_records;
        if (!m_warned_unplaced)
            std::fprintf(stderr,
                         "filter.pyust.expand: a record of pid %lld, tid %lld falls where no "
                         "stream of its class has an open packet: dropped (further ones are "
                         "counted at the end)\n",
                         static_cast<long long>(run.pid), static_cast<long long>(run.tid));
        m_warned_unplaced = true;
        return;
    }
    const bt_event_class* event_class = record.kind == RecordKind::call   ? target.call
                                        : record.kind == RecordKind::line ? target.line
                                                                          : target.ret;
    bt_message* created = create_event(target, event_class, packet, stream, record.value);
    MessageRef message(check_new(created, "Cannot create an expanded event message"));
    bt_event* event = bt_message_event_borrow_event(created);
    if (const bt_field* context = bt_event_borrow_common_context_field_const(
            bt_message_event_borrow_event_const(run.context->message.get()))) {
        bt_field* out = bt_event_borrow_common_context_field(event);
        copy_field(out, context);
        if (target.vpid.index >= 0)
            set_int(member_of(out, target.vpid), run.pid);
        if (target.vtid.index >= 0)
            set_int(member_of(out, target.vtid), run.tid);
    }
    bt_field* payload = bt_event_borrow_payload_field(event);
    switch (record.kind) {
    case RecordKind::call: {
        set_int(member_of(payload, target.call_id), static_cast<std::int64_t>(record.id));
        const auto name = m_names.find(record.id);
        check(bt_field_string_set_value(member_of(payload, target.call_name),
                                        name != m_names.end() ? name->second.c_str() : "?"),
              "Cannot set the name of an expanded python:call");
        break;
    }
    case RecordKind::ret:
    case RecordKind::ret_unwind:
        set_int(member_of(payload, target.ret_id), static_cast<std::int64_t>(record.id));
        set_int(member_of(payload, target.ret_unwind), record.kind == RecordKind::ret_unwind);
        break;
    case RecordKind::line:
        set_int(member_of(payload, target.line_id), static_cast<std::int64_t>(record.id));
        set_int(member_of(payload, target.line_line), record.line);
        break;
    }
    emit(message.release());
}

void ExpandIterator::summarize() const
{
    if (m_lost_records + m_malformed_batches + m_late_records + m_unplaced_records == 0)
        return;
    std::fprintf(stderr,
                 "filter.pyust.expand: records missing from the expanded trace: "
                 "%llu lost by "
                 "the tracer, %llu in %llu malformed batches, %llu too late to "
                 "put in order, "
                 "%llu with no open packet\n",
                 static_cast<unsigned long long>(m_lost_records),
                 static_cast<unsigned long long>(m_malformed_records),
                 static_cast<unsigned long long>(m_malformed_batches),
                 static_cast<unsigned long long>(m_late_records),
                 static_cast<unsigned long long>(m_unplaced_records));
}

ExpandIterator* iterator_of(bt_self_message_iterator* self) noexcept
{
    return static_cast<ExpandIterator*>(bt_self_message_iterator_get_data(self));
}

} // namespace

bt_component_class_initialize_method_status initialize(bt_self_component_filter* self,
                                                       bt_self_component_filter_configuration*,
                                                       const bt_value* params, void*) noexcept
{
    const CauseSink cause(bt_self_component_filter_as_self_component(self));
    return guard(
        cause, "Cannot initialize filter.pyust.expand",
        BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR,
        BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR, [&] {
            check_known_params(params, {"max-delay", "lookahead", "report-discarded"});
            auto settings = std::make_unique<Settings>();
            settings->max_delay = int_param(params, "max-delay").value_or(settings->max_delay);
            if (settings->max_delay < 0)
                throw Error("bad parameter value: name=max-delay, value=" +
                            std::to_string(settings->max_delay) + ", expected=ns >= 0");
            settings->lookahead = int_param(params, "lookahead").value_or(settings->lookahead);
            if (settings->lookahead < 0)
                throw Error("bad parameter value: name=lookahead, value=" +
                            std::to_string(settings->lookahead) + ", expected=ns >= 0");
            settings->report_discarded =
                bool_param(params, "report-discarded").value_or(settings->report_discarded);
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
    const CauseSink cause(self);
    return guard(cause, "Cannot initialize the message iterator of filter.pyust.expand",
                 BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_ERROR,
                 BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR, [&] {
                     const auto* settings = static_cast<const Settings*>(bt_self_component_get_data(
                         bt_self_message_iterator_borrow_component(self)));
                     bt_self_message_iterator_set_data(self, new ExpandIterator(self, *settings));
                     return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
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
    delete iterator_of(self);
}

} // namespace pyust::plugin::expand
