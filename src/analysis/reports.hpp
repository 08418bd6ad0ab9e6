// The outputs of sink.pyust.report, written from a finished StackModel: cProfile-like profile,
// call tree, per-line profile, folded stacks, Chrome Trace Event JSON and an SVG flame graph,
// plus the per-thread account of what was incomplete. Plain C++ (no babeltrace2), so that unit
// tests and other front ends can use them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/stack_model.hpp"

namespace pyust::analysis {

// Names a stream index the model was given (for the stream-wide lost-event windows).
using StreamNamer = std::function<std::string(std::uint64_t)>;

// What names a traced process, by pid: its command name (LTTng's procname context) and the
// script its __main__ module ran, when the trace shows them.
using ProcessNames = std::map<std::int64_t, std::string>;

// The order of the profile's and the lines' rows (largest first).
enum class SortKey { self, total, calls, mean };

// The choices of a report beyond its format; the defaults write everything.
struct ReportOptions {
    SortKey sort = SortKey::self;
    // profile and lines: rows per table at most (0: all); a last line says what was left out.
    std::size_t limit = 0;
    // tree: call paths under this share (0..1) of their thread's time are left out, with a
    // note.
    double min_share = 0;
    // profile, folded, svg: one table (tree) for every process instead of one per process.
    bool merge_processes = false;
    // tree, folded, svg: call paths deeper than this many frames are cut (0: none); what a frame
    // at that depth calls becomes one line, stack or box "[... N frames cut]" holding its time.
    // A tree's indentation and a folded stack's text grow with the depth: a recursion 20,000
    // deep would otherwise write 400 MB of tree and 2.6 GB of folded stacks.
    std::size_t max_depth = 0;
    // Every writer but ChromeWriter (which has its own): once the output reaches this many
    // bytes, the lines (rows, stacks, boxes) left are left out and counted (0: no limit); the
    // text formats say so in a last line, an SVG is closed all the same.
    std::uint64_t max_bytes = 0;
    // tree, folded, svg: asyncio tasks' frames under the task that created them, where it did
    // (its await chain), instead of under the event loop's Handle._run.
    bool tasks = false;
    ProcessNames processes;
};

// What a writer left out to stay within ReportOptions::max_depth and max_bytes, and what it
// wrote.
struct Cuts {
    std::uint64_t deep_paths = 0; // call paths cut for being deeper than max_depth
    std::uint64_t lines = 0;      // lines (rows, stacks, boxes) left out at max_bytes
    std::uint64_t bytes = 0;      // bytes written
    const char* unit = "lines";   // what lines are to the format: "stacks", "boxes"

    bool is_cut() const noexcept { return deep_paths || lines; }
};

// What cuts left out, in a sentence for standard error ("" when nothing was). Throws
// std::bad_alloc.
std::string cut_note(const Cuts& cuts, const ReportOptions& options);

// Fills options.processes: by commands (pid -> the command line python:process gave),
// "python3 prog.py --fast" (the program's base name, at most 160 bytes); a process without
// one (traces of older pyust versions) by procnames (pid -> command name, as the events'
// procname context says) followed by scripts (pid -> the file of the first __main__ code the
// process registered), "python3 /path/prog.py", or else by the __main__ code it ran (a
// forked child). Precondition: model.finish() was called. Throws std::bad_alloc.
void name_processes(const StackModel& model, const std::map<std::int64_t, std::string>& commands,
                    const std::map<std::int64_t, std::string>& procnames,
                    std::map<std::int64_t, std::string> scripts, ReportOptions& options);

// "pid 1234 (python3 prog.py)", or "pid 1234" when nothing names it. Throws std::bad_alloc.
std::string process_title(const ReportOptions& options, std::int64_t pid);

// The profile table: per function, calls, self and inclusive time, mean inclusive time per
// call, sorted by options.sort (self time by default), at most options.limit rows; one table
// per process unless there is one or options.merge_processes (then functions are merged by
// name and place). Precondition (all writers): model.finish() was called. Every writer stays
// within options.max_bytes (the tree, folded and svg ones within options.max_depth too) and
// returns what it left out. Throws what out throws (with exceptions enabled), std::bad_alloc.
Cuts write_profile(const StackModel& model, std::ostream& out, const ReportOptions& options = {});

// An indented call tree per thread (calls aggregated per call path), with inclusive and self
// times; nodes shorter than min_duration (ns, total) or than options.min_share of their
// thread's time are left out, and a last line counts them. Throws like write_profile.
Cuts write_tree(const StackModel& model, std::ostream& out, Timestamp min_duration,
                const ReportOptions& options = {});

// Folded stacks "frame;frame;frame self_ns", merged over threads, sorted. A node shorter than
// min_duration is cut and its time goes to its parent, so the sum stays the traced time. When
// the trace holds several processes (and not options.merge_processes), each stack starts with
// its process's title. Throws like write_profile.
Cuts write_folded(const StackModel& model, std::ostream& out, Timestamp min_duration,
                  const ReportOptions& options = {});

// The tasks format: per thread, its asyncio tasks in a table (wall time from creation to end,
// time before the first step, running and awaiting time, steps, how each ended; nested under
// their creators), then each task's figures (where it was created, what it awaited, by kind)
// and call tree (StackModel::task_nodes(): its coroutines nested as they await each other,
// their resumptions part of the same call), then the thread's frames outside tasks. At most
// options.limit tasks per thread (0: all), those that ran longest, in the order they were
// created. The trees leave out what write_tree does (options.min_share of the task's or the
// outside frames' time). Throws like write_profile.
Cuts write_tasks(const StackModel& model, std::ostream& out, Timestamp min_duration,
                 const ReportOptions& options = {});

// Per file:line: hits, time until the frame's next line (or its end), mean; sorted by
// options.sort (time by default), at most options.limit rows. Throws like write_profile.
Cuts write_lines(const StackModel& model, std::ostream& out, const ReportOptions& options = {});

// A self-contained SVG flame graph: click a frame to zoom, click the root to reset, hover for
// details, "Search" to highlight frames by a regular expression. One tower per thread. Nodes
// narrower than about a pixel, or shorter than min_duration, are merged into their parent.
// Throws like write_profile.
Cuts write_svg(const StackModel& model, std::ostream& out, Timestamp min_duration,
               const std::string& title, const ReportOptions& options = {});

// "Incomplete:" and one line per thread gap and stream gap; nothing when all is complete.
// Throws like write_profile.
Cuts write_gaps(const StackModel& model, std::ostream& out, const StreamNamer& stream_name,
                const ReportOptions& options = {});

// Chrome Trace Event JSON, streamed: one complete ("X") event per closed frame, written as the
// model closes it; thread names and the incomplete parts at the end. Times are microseconds from
// the origin given to set_origin.
class ChromeWriter : public FrameListener {
public:
    // Starts the JSON document. Once the frames written reach max_bytes (0: no limit), the
    // later frames are left out and counted; finish() says so. Precondition: out outlives the
    // writer. Throws like out.
    ChromeWriter(const StackModel& model, std::ostream& out, Timestamp min_duration,
                 std::uint64_t max_bytes = 0);

    // Sets time zero (the first event's time). noexcept.
    void set_origin(Timestamp origin) noexcept { m_origin = origin; }

    // Writes one X event, on its thread's lane, or its task's. Throws what out throws,
    // std::bad_alloc.
    void on_frame_closed(const Thread& thread, const Frame& frame, Timestamp begin,
                         Timestamp end) override;

    // Writes one X event "await <kind>" on the task's lane. Throws like on_frame_closed.
    void on_await(const Thread& thread, std::uint32_t task, AwaitKind kind, Timestamp begin,
                  Timestamp end) override;

    // The "tid" of an asyncio task's lane: this plus the task's index (no thread id reaches it:
    // Linux's pid_max is at most 2^22).
    static constexpr std::int64_t task_lane_base = 1 << 30;

    // Writes process and thread names and gaps and closes the document. Precondition:
    // model.finish() was called. Throws like on_frame_closed.
    void finish(const StreamNamer& stream_name, const ReportOptions& options = {});

    // Frames left out by the size limit, and the time from which they were (frames that
    // started from then on were left out). noexcept.
    std::uint64_t cut_frames() const noexcept { return m_cut; }
    Timestamp first_cut() const noexcept { return m_first_cut; }
    // Frames written. noexcept.
    std::uint64_t written_frames() const noexcept { return m_written; }
    // What the size limit left out, in a sentence. Precondition: cut_frames() != 0. Throws
    // std::bad_alloc.
    std::string cut_note() const;

private:
    void separate();
    // The lane ("tid") of a frame of thread running for task (no_task: the thread's).
    std::int64_t lane(const Thread& thread, std::uint32_t task);
    // Whether a slice [begin, end] is written: not shorter than the minimum, not left out
    // (and counted) past the size limit.
    bool keeps(Timestamp begin, Timestamp end);
    // Writes one X event. Precondition: keeps(begin, end).
    void write_slice(const std::string& name, const char* category, Timestamp begin, Timestamp end,
                     std::int64_t pid, std::int64_t tid);

    const StackModel& m_model;
    std::ostream& m_out;
    Timestamp m_min_duration;
    std::uint64_t m_max_bytes;
    std::uint64_t m_bytes = 0;
    std::uint64_t m_written = 0;
    std::uint64_t m_cut = 0;
    bool m_is_cutting = false;
    Timestamp m_first_cut = 0;
    std::string m_event; // reused buffer: one event's text
    Timestamp m_origin = 0;
    bool m_is_first = true;
    std::vector<bool> m_lanes; // per task: whether its lane has an event
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
// "pid 1 tid 2" with the thread's name when known, and the process's name when options know
// it ("pid 1 (python3 prog.py) tid 2 (MainThread)"). Throws std::bad_alloc.
std::string thread_title(const Thread& thread, const ReportOptions& options = {});

} // namespace pyust::analysis
