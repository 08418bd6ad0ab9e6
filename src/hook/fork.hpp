// The fork protocol (internal to src/hook; hook.hpp says what a child of
// os.fork() and of subprocess get): init() installs the pthread_atfork
// handlers, which run inside fork() itself; before_os_fork(),
// after_os_fork_parent() and after_fork_child() (hook.hpp) are Python's
// os.register_at_fork hooks.
#pragma once

namespace pyust::hook {

// Installs the pthread_atfork handlers (once per process: init()). false when
// pthread_atfork failed. Requires the GIL.
bool install_fork_handlers() noexcept;

} // namespace pyust::hook
