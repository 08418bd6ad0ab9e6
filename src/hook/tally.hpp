// The count of the events a process hands to LTTng, kept where it outlives the
// process: `pyust run` sums its traced processes' tallies for its summary
// instead of reading the whole trace again (a second pass as long as the run).
//
// Until tally_into() is called, the count lives in the process's memory. After,
// it lives in a file of the run's private directory, mapped shared: whatever
// way the process ends (os._exit(), a signal, SIGKILL), the file holds every
// event counted. A child of os.fork() gets a file of its own, counting from 0.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace pyust::hook {

struct EventTally {
    // The standard mode's events, the fast mode's code, thread and process
    // events: counted with the GIL held.
    std::uint64_t events = 0;
    // The fast mode's records, counted as their batches are written (by any
    // thread, the session watcher's too).
    std::atomic<std::uint64_t> records{0};
    // A start that went unrecorded (core.cpp's start()): how long pyust waited for the
    // session before it let the process run unrecorded (0: it did not give up), and how long
    // the process then ran before the session recorded it (0: not yet, or never).
    std::atomic<std::uint64_t> start_waited_ns{0};
    std::atomic<std::uint64_t> start_lost_ns{0};
};

// pyust run reads the files as four native-endian 64-bit words (pyust.tally).
static_assert(sizeof(EventTally) == 32);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// The tally events are counted into (never null).
extern EventTally* g_tally;

inline EventTally& tally() noexcept
{
    return *g_tally;
}

// Counts into a new file of directory from now on, starting with what was
// counted so far. Call with the GIL held while no thread writes batches (before
// start()). Throws TracerError when the file cannot be made, or when directory
// is not a run's (a symbolic link, another user's, or open to others: once the
// run is over, another user may have made it).
void tally_into(const std::string& directory);

// In the child of os.fork(): a file of its own, from 0 (back to the process's
// memory when it cannot be made: the run is over). noexcept.
void tally_after_fork_child() noexcept;

} // namespace pyust::hook
