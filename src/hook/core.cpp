// The hook's public API (hook.hpp): init(), start() and stop() and the calls
// around them, built on the core's parts, each in a file pair of its own, from
// the lowest up (a file includes only those below it):
//
//   state.hpp               the process-wide state, defined here
//   backend.hpp             the interface the back ends (backend_*.cpp) implement
//   registration.{hpp,cpp}  code objects: their CodeInfo, module and verdict
//   stacks.{hpp,cpp}        stacks announced and closed, the rundown
//   session.{hpp,cpp}       waiting for the session, the lost start, late sessions
//   watcher.{hpp,cpp}       the thread behind dormant hooks and periodic flushes
//   fork.{hpp,cpp}          the fork protocol
//
// The emitters (emitter.hpp), the registry, the tally and python_compat.hpp sit
// below them all.
#include "hook/hook.hpp"

#include <memory>
#include <new>
#include <string>
#include <vector>

#include <unistd.h>

#include "hook/backend.hpp"
#include "hook/command_line.hpp"
#include "hook/emitter.hpp"
#include "hook/fork.hpp"
#include "hook/session.hpp"
#include "hook/stacks.hpp"
#include "hook/state.hpp"
#include "hook/tally.hpp"
#include "hook/watcher.hpp"

namespace pyust::hook {

State& s_state = *new State;

namespace {

// The words of sys.orig_argv (in the file system's encoding, as the kernel had
// them), or /proc/self/cmdline's where sys has none (3.8, 3.9). Throws
// std::bad_alloc.
std::vector<std::string> own_command()
{
    std::vector<std::string> words;
    PyObject* argv = PySys_GetObject("orig_argv"); // borrowed
    if (argv == nullptr || !PyList_Check(argv))
        return read_own_cmdline();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(argv); ++i) {
        PyObject* word = PyList_GET_ITEM(argv, i);
        PyObject* bytes = PyUnicode_Check(word) ? PyUnicode_EncodeFSDefault(word) : nullptr;
        if (bytes == nullptr) {
            PyErr_Clear();
            words.emplace_back("?");
            continue;
        }
        words.emplace_back(PyBytes_AS_STRING(bytes),
                           static_cast<std::size_t>(PyBytes_GET_SIZE(bytes)));
        Py_DECREF(bytes);
    }
    return words;
}

} // namespace

// --------------------------------------------------------------- public API

void init(const std::string& own_dir)
{
    if (s_state.is_initialised)
        return;
    s_state.extra_index = compat::request_code_extra_index();
    if (s_state.extra_index < 0) {
        PyErr_Clear();
        throw TracerError("Cannot initialise pyust: the interpreter has no free code-extra "
                          "slot (too many tools store data on code objects)");
    }
    s_state.own_dir = own_dir;
    s_state.registry = std::make_unique<Registry>(static_cast<std::uint32_t>(getpid()));
    s_state.emitter = &lttng_emitter();
    if (!install_fork_handlers())
        throw TracerError("Cannot initialise pyust: pthread_atfork failed");
    s_state.is_initialised = true;
}

void start(const Options& options)
{
    if (!s_state.is_initialised)
        throw TracerError("Cannot start tracing: pyust's native hook was not initialised "
                          "(import pyust rather than pyust._native)");
    if (s_state.is_active)
        throw TracerError("Cannot start tracing: pyust is already tracing; call "
                          "pyust.stop() first");
    prefix::Filter filter;
    try {
        filter = prefix::Filter(options.include, options.exclude);
    } catch (const std::bad_alloc&) {
        throw;
    } catch (const std::exception& error) {
        throw TracerError(std::string("Cannot start tracing: ") + error.what());
    }
    const Options previous = s_state.options;
    s_state.options = options;
    try {
        backend::check_free();
    } catch (...) {
        s_state.options = previous;
        throw;
    }
    // Before the first event (python:process, the stack, the fast mode's horizon): the
    // program's first line must not run before the session records it.
    wait_for_session(options.fast ? batch_emitter() : lttng_emitter());
    s_state.filter = std::move(filter);
    ++s_state.generation;
    // This start may record into another session than the last one did (pyust
    // attach, start/stop/start): every code object is registered in the trace
    // again when it next runs, as if new (registration.cpp's decide() emits
    // python:code when code becomes traced).
    s_state.registry->for_each_code([](CodeInfo& info) { info.trace &= ~k_traced; });
    s_state.emitter = options.fast ? &batch_emitter() : &lttng_emitter();
    s_state.has_batched = s_state.has_batched || options.fast;
    s_state.was_code_enabled = s_state.emitter->is_code_enabled();
    s_state.command = join_command(options.command.empty() ? own_command() : options.command);
    s_state.emitter->begin();
    emit_process();

    PyFrameObject* frame = PyEval_GetFrame(); // borrowed
    if (options.hide_caller_stack)
        hide_stack(frame);
    else
        open_stack(frame);
    // Dormant from the start when no session records (the stack announced
    // above then went nowhere; the hooks announce it again when they wake).
    set_watcher_options(options);
    const bool is_dormant =
        options.is_dormant_allowed && !s_state.emitter->is_recording() && start_watcher();
    if (!is_dormant) {
        try {
            backend::install(true);
        } catch (...) {
            close_stack(frame);
            throw;
        }
        set_hooked(true);
        if (needs_watcher(options))
            start_watcher();
    }
    s_state.is_active = true;
    // The session came between the wait's end and now: nothing of the program ran yet.
    if (s_state.is_hooked && s_state.was_code_enabled)
        end_lost_start();
}

void stop() noexcept
{
    if (!s_state.is_active)
        return;
    s_state.is_active = false;
    stop_watcher();
    if (s_state.is_hooked) {
        backend::uninstall(true);
        set_hooked(false);
        close_stack(PyEval_GetFrame());
    }
    s_state.emitter->flush_all(true);
}

bool is_active() noexcept
{
    return s_state.is_active;
}

bool is_hooked() noexcept
{
    return s_state.is_hooked;
}

void attach_current_thread(const std::string& name)
{
    if (!s_state.is_active)
        return;
    name_thread(current_tid(), name);
    if (s_state.is_hooked)
        backend::attach_current_thread();
}

void name_thread(std::int64_t tid, const std::string& name)
{
    s_state.registry->set_thread_name(tid, name);
    s_state.emitter->thread(tid, name.c_str());
}

std::uint64_t emitted_events() noexcept
{
    if (!s_state.is_initialised)
        return 0;
    return tally().events + tally().records.load(std::memory_order_relaxed);
}

void flush(bool is_final) noexcept
{
    if (s_state.is_initialised)
        s_state.emitter->flush_all(is_final);
}

void before_exec() noexcept
{
    if (!s_state.is_active)
        return;
    if (s_state.is_hooked)
        close_stack(PyEval_GetFrame());
    flush(false);
}

void after_failed_exec() noexcept
{
    if (s_state.is_active && s_state.is_hooked)
        open_stack(PyEval_GetFrame());
}

} // namespace pyust::hook
