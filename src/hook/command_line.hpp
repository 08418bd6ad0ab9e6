// The command line a process reports in python:process: its words joined as
// a POSIX shell would need them, so that a report can name each process of a
// trace by what started it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pyust::hook {

// The most bytes of a command line in an event: past it, the line ends in "...".
inline constexpr std::size_t max_command_bytes = 4096;

// words joined by spaces, each quoted when a shell would split or expand it
// ('it'\''s'; '' for an empty word), cut to at most limit bytes on a UTF-8
// character boundary with "..." at the end when longer. Throws std::bad_alloc.
std::string join_command(const std::vector<std::string>& words,
                         std::size_t limit = max_command_bytes);

// This process's argv from /proc/self/cmdline; empty when unreadable.
// Throws std::bad_alloc.
std::vector<std::string> read_own_cmdline();

} // namespace pyust::hook
