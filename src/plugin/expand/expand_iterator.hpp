// The message iterator of filter.pyust.expand (see expand.hpp for what the filter does).
//
// Messages flow in three stages. Arrival (arrive, in expand_iterator.cpp): each upstream
// message gets its time (its default clock snapshot, else the time of the message before it)
// and an arrival number; a python:batch is decoded into a run of records, python:code names
// ids, python:horizon moves its process's horizon (batch_intake.cpp). Waiting: forwarded
// messages and runs wait in the ReleaseQueue. Release (release): everything up to the smallest
// horizon of the fast-mode processes goes out in (time, arrival) order; records become event
// messages only then (events.hpp), in the packet open at that point of the output.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "analysis/thread_key.hpp"
#include "plugin/common/bt_util.hpp"
#include "plugin/expand/classes.hpp"
#include "plugin/expand/clock.hpp"
#include "plugin/expand/diagnostics.hpp"
#include "plugin/expand/events.hpp"
#include "plugin/expand/release_queue.hpp"
#include "plugin/expand/settings.hpp"
#include "plugin/expand/streams.hpp"

namespace pyust::plugin::expand {

// What the filter keeps of a thread (pid, tid) of the fast mode between its batches.
struct ThreadState {
    std::uint64_t next_first = 0;               // the previous batch's first + count
    std::uint64_t end_ns = 0;                   // the previous batch's end_ns
    std::weak_ptr<const ContextSource> context; // of its latest waiting run
};

class ExpandIterator {
public:
    // Creates the upstream iterator. Precondition: self is the iterator of a filter.pyust.expand
    // component. Throws BtError, std::bad_alloc.
    ExpandIterator(bt_self_message_iterator* self, const Settings& settings);
    ExpandIterator(const ExpandIterator&) = delete;
    ExpandIterator& operator=(const ExpandIterator&) = delete;
    // Puts the references of the messages still held.
    ~ExpandIterator();

    // Fills messages with up to capacity messages. Throws Error, BtError,
    // std::bad_alloc.
    bt_message_iterator_class_next_method_status next(bt_message_array_const messages,
                                                      std::uint64_t capacity, std::uint64_t* count);

private:
    // expand_iterator.cpp: arrival, waiting, release.

    // Pulls the next upstream messages and takes them in: false when upstream has none for now
    // ("try again"). When upstream ends or fails (not out of memory), m_is_upstream_ended is
    // set (a failure's error is kept in m_upstream_error, for after the held messages). Throws
    // Error, BtError (upstream out of memory), std::bad_alloc.
    bool take_upstream();
    // Takes in an upstream message: a python:* event of the fast mode is read (and dropped,
    // or replaced by its records), every other message waits for its release. Throws Error
    // (a bad class or time), BtError, std::bad_alloc.
    void arrive(MessageRef message);
    // Puts a message of the given time in the queue, or straight into the output when nothing
    // holds the queue. Precondition: time is not before the time of the messages waiting.
    // Throws std::bad_alloc (the message is put then).
    void wait(MessageRef message, std::int64_t time);
    // The time up to which messages may go: the smallest horizon of the fast-mode processes
    // that still hold the queue (forever when none does). Warns once about a stale process.
    // noexcept.
    std::int64_t limit() noexcept;
    // Updates m_limit and m_granted after an arrival. noexcept.
    void grant() noexcept;
    // Releases up to budget messages (up to m_limit) into the output, in (time, arrival)
    // order. Throws Error, BtError, std::bad_alloc.
    void release(std::uint64_t budget);
    // Puts a message (whose reference it takes) at the end of the output, and follows the
    // streams and packets it opens and closes. Throws std::bad_alloc (the message is put).
    void emit(const bt_message* message);
    // Emits the event message of a record of run, or counts it when no stream of its class
    // has a packet open and none can be opened early. Throws BtError, std::bad_alloc.
    void emit_record(const Run& run, const Record& record);
    // For a record that falls between two packets of its stream: LTTng opens a packet only
    // when the first event after a flush (a live session's timer, a switch timer) is written,
    // and that event can be the batch that carries the record, older than it. Emits the
    // beginning of that packet, which still waits in the queue, at the record's time instead
    // of its own: false when it does not wait there. Throws BtError, std::bad_alloc.
    bool open_packet_early(const Run& run, const Record& record);

    // batch_intake.cpp: the python:* events of the fast mode.

    // A python:code event: its id's name. Throws std::bad_alloc.
    void on_code(const bt_event* event, const EventInfo& info);
    // A python:horizon event at time: its process's horizon moves there, or the process leaves
    // the fast mode (final). Throws std::bad_alloc.
    void on_horizon(const bt_event* event, const EventInfo& info, std::int64_t time);
    // A python:batch event, the index-th event of its stream, at time: its records become a
    // run that waits; gaps, a malformed batch and late records become discarded-events
    // messages. The batch message itself is dropped. Throws Error (a bad stream class, a time
    // that overflows), BtError, std::bad_alloc.
    void on_batch(MessageRef message, const EventInfo& info, std::int64_t time,
                  std::uint64_t index);
    // Follows the sequence of the thread of a batch (header) on stream: a gap since its
    // previous batch is records the tracer lost, reported from the end of that batch (or the
    // time already released, released_value, if later) to first_value (the batch's first
    // record, else its beginning), clock values of target. Returns the thread's state, valid
    // for the iterator's life. Throws Error (time overflow), BtError, std::bad_alloc.
    ThreadState& follow_thread(const BatchHeader& header, const bt_stream* stream,
                               const Target& target, std::uint64_t first_value,
                               std::uint64_t released_value);
    // Skips the records of run whose time was already granted (they come first: times only
    // grow within a batch) and reports them at the time of batch, a python:batch message of
    // header's thread that arrived at time on stream. Precondition: run holds a current
    // record. Returns whether one is left. Throws Error (time overflow), BtError,
    // std::bad_alloc.
    bool skip_late(Run& run, const bt_message* batch, std::int64_t time, const bt_stream* stream,
                   const BatchHeader& header);
    // A discarded-events message of ours for count records on stream, or null
    // (and a line on standard error) when its stream class has no discarded
    // events or report-discarded=no. Throws BtError, std::bad_alloc.
    MessageRef discarded(const bt_stream* stream, const Target& target, std::uint64_t count,
                         std::uint64_t begin, std::uint64_t end, const char* why);
    // Makes a discarded-events message of ours wait at time begin (a clock value on target's
    // clock), or at the time already granted if later. Throws Error (time overflow),
    // std::bad_alloc.
    void wait_discarded(MessageRef message, const bt_stream* stream, const Target& target,
                        std::uint64_t begin);
    // The context source for the records of batch, a python:batch message of thread: the
    // thread's latest one when it is on the same stream with the same common context, else
    // a new one. Throws BtError, std::bad_alloc.
    std::shared_ptr<const ContextSource> context_for(ThreadState& thread, const bt_message* batch,
                                                     const Target& target);

    bt_self_message_iterator* m_self;
    Settings m_settings;
    MessageIteratorRef m_upstream;
    bool m_is_upstream_ended = false;
    bool m_is_flushed = false;
    // Upstream failed: its error, returned once the held messages are out.
    std::unique_ptr<const bt_error, decltype(&bt_error_release)> m_upstream_error{nullptr,
                                                                                  bt_error_release};

    std::deque<const bt_message*> m_output; // owned, released, in output order
    ReleaseQueue m_queue;
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
    QualnameById m_names; // code id -> qualname
    std::unordered_map<analysis::ThreadKey, ThreadState, analysis::ThreadKeyHash> m_threads;
    ClassCache m_classes;
    StreamTable m_streams;
    Diagnostics m_diagnostics;
};

} // namespace pyust::plugin::expand
