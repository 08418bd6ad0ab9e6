// The CPython hook: installs C profile/trace functions on every thread of the
// interpreter and turns interpreter events into pyust events through an
// Emitter. Every function here requires the GIL.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pyust::hook {

// Raised (as pyust.TracerError in Python) for every control-API misuse; the
// message names the fix.
class TracerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Options {
    bool c_calls = false; // python:c_call/c_return for C functions called from traced code
    bool lines = false;   // python:line for traced code
    // Never trace the code of the frames below start() (the runner's own
    // start-up frames) instead of announcing them as open calls.
    bool hide_caller_stack = false;
    // Never trace code from files under this directory (with a trailing
    // separator; empty: none): pyust attach's control directory, whose step
    // files run on the program's stack.
    std::string hidden_dir;
    // Module-name prefixes (src/prefix/prefix_table.hpp): with a non-empty
    // include list only matching modules are traced; exclude removes some.
    // The most specific prefix decides, once per code object.
    std::vector<std::string> include;
    std::vector<std::string> exclude;
    // Remove the interpreter hooks while no session records python:* events,
    // and put them back (within 100 ms) when one does: untraced speed while
    // nobody listens.
    bool is_dormant_allowed = true;
    // The fast mode: calls, returns and lines go into per-thread batches
    // (python:batch), written when full, every few tens of milliseconds, at
    // thread exit, stop() and interpreter exit.
    bool fast = false;
    // The process's command line for python:process; empty: sys.orig_argv,
    // else (Python 3.8, 3.9) /proc/self/cmdline.
    std::vector<std::string> command;
    // Wait, before the first event, up to this many milliseconds for a session to record
    // the process (0: no wait; negative: no wait and no python:lost_start): LTTng-UST registers
    // with the session daemons in the background, and a session already started reaches a process
    // only then (at once when LTTng-UST's own wait, LTTNG_UST_REGISTER_TIMEOUT, let it finish; not
    // with LTTNG_UST_REGISTER_TIMEOUT=0 or a slow daemon). Past it the program runs unrecorded;
    // when a session then records it, the process emits python:lost_start and notes the loss
    // in its tally (tally.hpp). The same in the child of os.fork(), which registers again.
    long start_wait_ms = -1;
};

// Prepares the hook once per process. own_dir: pyust's package directory with
// a trailing separator; code under it is never traced.
// Throws TracerError when the interpreter has no free code-extra slot.
void init(const std::string& own_dir);

// Starts tracing every thread of the interpreter: the caller's at once, the
// other running threads at their next Python event (each first re-emits its
// current stack as calls, so a trace is balanced per thread). Threads started
// later must call attach_current_thread(). Precondition: init() was called.
// Throws TracerError when already tracing, when another profiler or tracer
// holds the interpreter's hook, or when the module filter cannot be built
// (PYUST_SIMD names an implementation this machine cannot run).
void start(const Options& options);

// Stops tracing. Frames still open on the caller's thread get a return now;
// other threads get theirs at their next Python event. No-op when not tracing.
void stop() noexcept;

bool is_active() noexcept;

// Whether the interpreter hooks are installed right now (false while a
// dormant hook waits for a session).
bool is_hooked() noexcept;

// Stops the thread that watches for sessions (dormant hooks), waiting for it
// with the GIL released. Called at interpreter exit, before finalisation; a
// later start() starts it again. noexcept.
void stop_watcher() noexcept;

// Re-emits process, thread and code registration events for everything seen,
// for a session that started after the program did.
void rundown() noexcept;

// Installs the hook on the calling thread (a thread started after start())
// and names it. No-op when not tracing. Throws std::bad_alloc.
void attach_current_thread(const std::string& name);

// Names a thread that was already running at start(). Throws std::bad_alloc.
void name_thread(std::int64_t tid, const std::string& name);

// Events the hook has handed to LTTng while a session enabled them (recorded
// plus discarded; the fast mode's records in batches): since the process
// started, or, under pyust run, since it started or forked (tally.hpp).
std::uint64_t emitted_events() noexcept;

// Fast mode: writes every thread's pending records now (before os._exit,
// which skips the interpreter's exit). final: no more records follow.
void flush(bool is_final) noexcept;

// Before an exec from Python (pyust wraps os.execv and os.execve, through which
// os's other exec functions go): the process image ends there with its frames,
// while its pid and the calling thread's tid go on in the program exec'd, which
// may be traced too. The calling thread's frames get their returns (else the new
// program's frames would nest in them) and the fast mode writes its records.
void before_exec() noexcept;

// After an exec that failed (it raised): the calling thread's frames go on, and
// are announced again as calls.
void after_failed_exec() noexcept;

// LTTng-UST is kept consistent across fork() by pthread_atfork handlers that
// init() installs (no LD_PRELOAD). In the child of os.fork() they restart it
// (its own registration, listener threads and file descriptors); in the child
// of any other fork (subprocess's fork and exec, which does not run Python's
// fork hooks) they only give back its signal mask: starting LTTng-UST's
// threads there would race with subprocess closing every descriptor before
// exec, and LTTng-UST aborts on a descriptor closed behind its back.
//
// Before os.fork() (an os.register_at_fork before hook): marks this thread's
// fork as one Python goes on from in the child.
void before_os_fork() noexcept;

// After os.fork() in the parent (os.register_at_fork).
void after_os_fork_parent() noexcept;

// After os.fork() in the child, once Python is ready there (os.register_at_fork):
// names the child's thread and announces its stack, so the child's stream is
// balanced.
void after_fork_child() noexcept;

} // namespace pyust::hook
