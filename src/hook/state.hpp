// The hook's process-wide state (internal to src/hook): the options of the
// current start(), the module filter, the registry of code objects and threads,
// the emitter of the current mode, and what the fork protocol and the wait for
// the session keep between their steps. Defined in core.cpp; every part of the
// hook reads it, and every access requires the GIL.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>

#include "hook/emitter.hpp"
#include "hook/hook.hpp"
#include "hook/python_compat.hpp"
#include "hook/registry.hpp"
#include "prefix/prefix_table.hpp"

namespace pyust::hook {

struct State {
    bool is_initialised = false;
    bool is_active = false;
    bool is_hooked = false;        // the interpreter hooks are installed
    bool was_code_enabled = false; // python:code enabled at the last check
    Options options;
    prefix::Filter filter;        // the module filter of the current start()
    std::uint32_t generation = 1; // bumped by every start() (see CodeInfo)
    Py_ssize_t extra_index = -1;
    std::string own_dir;
    std::unique_ptr<Registry> registry;
    Emitter* emitter = nullptr; // the standard or the fast mode's
    bool has_batched = false;   // the fast mode's emitter was used
    std::string command;        // python:process's command line (command_line.hpp)
    // Fork protocol: LTTng-UST's saved signal mask, the forking thread, and the thread in
    // os.fork() (its before hook ran: Python goes on in the child).
    sigset_t fork_sigset;
    std::int64_t forking_tid = 0;
    std::int64_t os_fork_tid = 0;
    bool is_subprocess_fork = false; // os_fork_tid's fork is subprocess's, with a preexec_fn
    // A start that gave up waiting for the session (Options::start_wait_ms): since when the
    // process runs unrecorded (CLOCK_MONOTONIC, LTTng's clock; 0: none), and how long the wait
    // was. Cleared when a session records the process.
    std::uint64_t lost_since_ns = 0;
    std::uint64_t lost_waited_ns = 0;
};

// Guarded by the GIL. Never destroyed: daemon threads may still be inside
// the hook while the process runs its static destructors at exit.
extern State& s_state;

} // namespace pyust::hook
