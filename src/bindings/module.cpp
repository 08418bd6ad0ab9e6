// pyust._native: the Python side of the hook's control API. pybind11 lives in
// this file only; the hot path (src/hook) is plain C API.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include "hook/backend.hpp"
#include "hook/hook.hpp"
#include "hook/registration.hpp"
#include "hook/stacks.hpp"
#include "hook/tally.hpp"

namespace py = pybind11;
namespace hook = pyust::hook;

// pyust attach's detach on CPython 3.10 to 3.13: gdb schedules this with
// Py_AddPendingCall, so that the target's main thread runs pyust._attached.stop()
// at its next safe point. A C function rather than a line of Python to compile:
// no new code object of ours runs on the traced stack before the hooks are off.
// A pending call returns 0 and leaves no exception set (else the interpreter
// raises SystemError in the program), whatever happens.
extern "C" __attribute__((visibility("default"))) int pyust_attach_stop(void*) noexcept
{
    PyObject* module = PyImport_ImportModule("pyust._attached");
    PyObject* result =
        module == nullptr ? nullptr : PyObject_CallMethod(module, "stop_pending", nullptr);
    if (result == nullptr)
        PyErr_Clear(); // the attacher reports the missing answer
    Py_XDECREF(result);
    Py_XDECREF(module);
    return 0;
}

namespace {

// Whether an exec of path (os.execv's or os.execve's first argument) can succeed: a file
// descriptor (fexecve), or a file this process may execute.
bool may_exec(py::handle path)
{
    if (PyLong_Check(path.ptr()))
        return true;
    PyObject* bytes = nullptr;
    if (PyUnicode_FSConverter(path.ptr(), &bytes) == 0) {
        PyErr_Clear(); // the exec itself raises the error
        return false;
    }
    const bool is_executable = access(PyBytes_AS_STRING(bytes), X_OK) == 0;
    Py_DECREF(bytes);
    return is_executable;
}

// A native find_spec of pyust's sys.meta_path entries: None but for the module watched,
// whose import pyust's Python function (in module) takes over.
py::object watched_spec(py::handle name, const char* watched, const char* module,
                        const char* function)
{
    if (!PyUnicode_Check(name.ptr()) || PyUnicode_CompareWithASCIIString(name.ptr(), watched) != 0)
        return py::none();
    return py::module_::import(module).attr(function)(name);
}

} // namespace

PYBIND11_MODULE(_native, module)
{
    module.doc() = "pyust's native hook (use the pyust package, not this module)";

    // C++ TracerError becomes the package's pyust.TracerError, so users catch
    // one class whatever raised it.
    py::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error)
                std::rethrow_exception(error);
        } catch (const hook::TracerError& e) {
            py::object type = py::module_::import("pyust").attr("TracerError");
            PyErr_SetString(type.ptr(), e.what());
        }
    });

    module.def("init", &hook::init, py::arg("own_dir"),
               "Prepare the hook; code under own_dir (pyust itself) is never traced.");
    module.def(
        "start",
        [](bool c_calls, bool lines, bool hide_caller_stack, std::vector<std::string> include,
           std::vector<std::string> exclude, bool dormant, bool fast,
           std::vector<std::string> command, std::string hidden_dir, long start_wait_ms) {
            hook::Options options;
            options.c_calls = c_calls;
            options.lines = lines;
            options.hide_caller_stack = hide_caller_stack;
            options.include = std::move(include);
            options.exclude = std::move(exclude);
            options.is_dormant_allowed = dormant;
            options.fast = fast;
            options.command = std::move(command);
            options.hidden_dir = std::move(hidden_dir);
            options.start_wait_ms = start_wait_ms;
            hook::start(options);
        },
        py::kw_only(), py::arg("c_calls") = false, py::arg("lines") = false,
        py::arg("hide_caller_stack") = false, py::arg("include") = std::vector<std::string>{},
        py::arg("exclude") = std::vector<std::string>{}, py::arg("dormant") = true,
        py::arg("fast") = false, py::arg("command") = std::vector<std::string>{},
        py::arg("hidden_dir") = std::string{}, py::arg("start_wait_ms") = -1,
        "Start tracing every thread. command: the command line python:process reports "
        "(default: sys.orig_argv, else /proc/self/cmdline); hidden_dir: code from files under "
        "it is never traced (pyust attach's own); start_wait_ms: wait up to this long for a "
        "session to record the process first (0: not at all, but say so when none does; "
        "negative: neither).");
    module.def("stop", &hook::stop, "Stop tracing every thread.");
    module.def(
        "hide_code",
        [](py::handle code) {
            if (!PyCode_Check(code.ptr()))
                throw py::type_error("hide_code takes a code object");
            hook::hide_code(reinterpret_cast<PyCodeObject*>(code.ptr()));
        },
        py::arg("code"),
        "Never trace this code object (pyust attach's own code on the program's stack).");
    module.def("backend", &hook::backend::name,
               "The interpreter hook in use: \"setprofile\" (up to 3.11) or \"monitoring\".");
    module.def("is_active", &hook::is_active);
    module.def("is_hooked", &hook::is_hooked,
               "Whether the interpreter hooks are installed (false while dormant).");
    module.def("stop_watcher", &hook::stop_watcher,
               "Stop the session watcher (an atexit hook: before finalisation).");
    module.def("rundown", &hook::rundown,
               "Re-emit every process, thread and code registration event.");
    module.def("attach_current_thread", &hook::attach_current_thread, py::arg("name"),
               "Trace the calling thread (started after start()) under this name.");
    module.def("name_thread", &hook::name_thread, py::arg("tid"), py::arg("name"));
    module.def("emitted_events", &hook::emitted_events,
               "Events the hook has handed to LTTng since the process started.");
    module.def("tally_into", &hook::tally_into, py::arg("directory"),
               "Count the events handed to LTTng in a new file of directory from now on (pyust "
               "run's summary); call before start().");
    module.def(
        "lost_start",
        [] {
            return py::make_tuple(hook::tally().start_waited_ns.load(),
                                  hook::tally().start_lost_ns.load());
        },
        "(waited_ns, lost_ns): how long the last start waited for a session before it let the "
        "process run unrecorded (0: it did not give up), and how long the process then ran "
        "before a session recorded it (0: not yet).");
    module.def("flush", &hook::flush, py::arg("final") = false,
               "Fast mode: write every thread's pending records now (before os._exit).");
    module.def(
        "switch_stacks",
        [](py::handle origin, py::handle target) {
            const auto frame = [](py::handle object) {
                return object.is_none() || !PyFrame_Check(object.ptr())
                           ? nullptr
                           : reinterpret_cast<PyFrameObject*>(object.ptr());
            };
            hook::switch_stacks(frame(origin), frame(target));
        },
        py::arg("origin"), py::arg("target"),
        "A greenlet switch: the frames of origin's stack stop, those of target's run again "
        "(each the top frame of its stack, or None).");
    module.def(
        "find_greenlet_spec",
        [](py::handle name, py::handle, py::handle) {
            return watched_spec(name, "greenlet", "pyust._greenlet", "find_spec");
        },
        py::arg("name"), py::arg("path") = py::none(), py::arg("target") = py::none(),
        "The find_spec of pyust's sys.meta_path entry: None but for greenlet "
        "(pyust._greenlet.find_spec). Native, so that the program's imports run no Python "
        "code of pyust's, which a trace function (debugger, coverage, trace) would step into.");
    module.def(
        "find_threading_spec",
        [](py::handle name, py::handle, py::handle) {
            return watched_spec(name, "threading", "pyust", "_threading_spec");
        },
        py::arg("name"), py::arg("path") = py::none(), py::arg("target") = py::none(),
        "The find_spec of pyust's other sys.meta_path entry, while the program has not "
        "imported threading: None but for threading (pyust._threading_spec). Native for the "
        "reason find_greenlet_spec is.");
    module.def(
        "leaving",
        [](py::object original, bool is_exec) {
            // A C function, so that a trace function (a debugger's) sees no frame of pyust's.
            return py::cpp_function(
                [original, is_exec](py::args args, py::kwargs kwargs) -> py::object {
                    if (!is_exec) {
                        hook::flush(true);
                        return original(*args, **kwargs);
                    }
                    // os.execvp tries every directory of PATH in turn: the attempts that
                    // cannot succeed must leave the caller's frames alone.
                    if (args.empty() || !may_exec(args[0]))
                        return original(*args, **kwargs);
                    hook::before_exec();
                    try {
                        return original(*args, **kwargs);
                    } catch (...) {
                        hook::after_failed_exec();
                        throw;
                    }
                },
                py::name(py::str(original.attr("__name__")).cast<std::string>().c_str()),
                py::doc(py::str(original.attr("__doc__")).cast<std::string>().c_str()));
        },
        py::arg("original"), py::arg("is_exec"),
        "A wrapper of os._exit (is_exec false: the fast mode's records are written first, the "
        "last) or of os.execv or os.execve (the calling thread's frames return first, and are "
        "announced again if the exec fails).");
    module.def("before_os_fork", &hook::before_os_fork,
               "Mark this thread's fork as os.fork() (an os.register_at_fork before hook).");
    module.def("after_os_fork_parent", &hook::after_os_fork_parent,
               "After os.fork() in the parent (an os.register_at_fork hook).");
    module.def("after_fork_child", &hook::after_fork_child,
               "Announce the child's stack after os.fork() (an os.register_at_fork hook).");
}
