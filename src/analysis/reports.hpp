// The outputs of sink.pyust.report, written from a finished StackModel: cProfile-like profile,
// call tree, per-line profile, folded stacks, Chrome Trace Event JSON and an SVG flame graph,
// plus the per-thread account of what was incomplete. Plain C++ (no babeltrace2), so that unit
// tests and other front ends can use them.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <unordered_map>

#include "stack_model.hpp"

namespace pyust::analysis {

// Names a stream index the model was given (for the stream-wide lost-event windows).
using StreamNamer = std::function<std::string(std::uint64_t)>;

// The profile table: per function, calls, self and inclusive time, mean inclusive time per
// call, sorted by self time. Precondition (all writers): model.finish() was called.
// Throws what out throws (with exceptions enabled), std::bad_alloc.
void write_profile(const StackModel& model, std::ostream& out);

// An indented call tree per thread (calls aggregated per call path), with inclusive and self
// times; nodes shorter than min_duration (ns, total) are left out. Throws like write_profile.
void write_tree(const StackModel& model, std::ostream& out, Timestamp min_duration);

// Folded stacks "frame;frame;frame self_ns", merged over threads, sorted. A node shorter than
// min_duration is cut and its time goes to its parent, so the sum stays the traced time.
// Throws like write_profile.
void write_folded(const StackModel& model, std::ostream& out, Timestamp min_duration);

// Per file:line: hits, time until the frame's next line (or its end), mean. Throws like
// write_profile.
void write_lines(const StackModel& model, std::ostream& out);

// A self-contained SVG flame graph: click a frame to zoom, click the root to reset, hover for
// details, "Search" to highlight frames by a regular expression. One tower per thread. Nodes
// narrower than about a pixel, or shorter than min_duration, are merged into their parent.
// Throws like write_profile.
void write_svg(const StackModel& model, std::ostream& out, Timestamp min_duration,
               const std::string& title);

// "Incomplete:" and one line per thread gap and stream gap; nothing when all is complete.
// Throws like write_profile.
void write_gaps(const StackModel& model, std::ostream& out, const StreamNamer& stream_name);

// Chrome Trace Event JSON, streamed: one complete ("X") event per closed frame, written as the
// model closes it; thread names and the incomplete parts at the end. Times are microseconds from
// the origin given to set_origin.
class ChromeWriter : public FrameListener {
public:
    // Starts the JSON document. Precondition: out outlives the writer. Throws like out.
    ChromeWriter(const StackModel& model, std::ostream& out, Timestamp min_duration);

    // Sets time zero (the first event's time). noexcept.
    void set_origin(Timestamp origin) noexcept { m_origin = origin; }

    // Writes one X event. Throws what out throws, std::bad_alloc.
    void on_frame_closed(const Thread& thread, const Frame& frame, Timestamp begin,
                         Timestamp end) override;

    // Writes thread names and gaps and closes the document. Precondition: model.finish() was
    // called. Throws like on_frame_closed.
    void finish(const StreamNamer& stream_name);

private:
    void separate();

    const StackModel& m_model;
    std::ostream& m_out;
    Timestamp m_min_duration;
    Timestamp m_origin = 0;
    bool m_is_first = true;
};

// Per-function statistics as if every frame still open closed at now: what `top` shows of a
// running program. A frame open since before now adds its time so far (self: minus its closed
// children and its open child; inclusive: only for the outermost open frame of a function), not
// a call. Precondition: now is at or after every event fed to the model (open frames of a
// thread that has not finished). Throws std::bad_alloc.
using FunctionTable = std::unordered_map<FrameId, FunctionStats, FrameIdHash>;
FunctionTable function_snapshot(const StackModel& model, Timestamp now);

// One refresh of the `top` table.
struct TopFrame {
    Timestamp begin = 0;      // trace time of the previous snapshot (or the first event)
    Timestamp end = 0;        // trace time of this snapshot
    std::uint64_t events = 0; // events read since the previous snapshot
    std::size_t max_rows = 0; // functions shown at most (0: all)
};

// The `top` table: per function, its share of the interval (self time / interval length: a
// thread busy in it all along is 100%), self and inclusive time and calls completed in the
// interval [before, after], then its self time and calls since the first snapshot; sorted by
// the interval's self time. before and after are function_snapshot() results. Throws what out
// throws, std::bad_alloc.
void write_top(const StackModel& model, const FunctionTable& before, const FunctionTable& after,
               const TopFrame& frame, std::ostream& out);

// Formatting helpers shared by the writers (and the sink's notes).
// "1.500 ms", "250.000 us", "12 ns", "3.200 s". Throws std::bad_alloc.
std::string format_duration(Timestamp ns);
// Seconds from the origin with nanoseconds: "1700000000.123456789". Throws std::bad_alloc.
std::string format_time(Timestamp ns);
// "pid 1 tid 2" with the thread's name when known. Throws std::bad_alloc.
std::string thread_title(const Thread& thread);

} // namespace pyust::analysis
