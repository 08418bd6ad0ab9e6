// What the trace is told about what already runs (see stacks.hpp): the stacks
// of threads announced as calls and closed as returns, and the rundown that
// names the process, its threads and its code again.
#include "hook/stacks.hpp"

#include <new>
#include <string>
#include <vector>

#include "hook/backend.hpp"
#include "hook/registration.hpp"
#include "hook/state.hpp"

namespace pyust::hook {

namespace {

// Frames of `frame`'s stack, outermost first, as new references.
std::vector<PyFrameObject*> stack_of(PyFrameObject* frame)
{
    std::vector<PyFrameObject*> frames;
    Py_XINCREF(frame);
    for (PyFrameObject* f = frame; f != nullptr; f = PyFrame_GetBack(f))
        frames.push_back(f);
    return {frames.rbegin(), frames.rend()};
}

void release(std::vector<PyFrameObject*>& frames) noexcept
{
    for (PyFrameObject* f : frames)
        Py_DECREF(f);
    frames.clear();
}

// "3.11.7" out of Py_GetVersion()'s "3.11.7 (main, ...) [GCC ...]".
const char* python_version() noexcept
{
    static const std::string version = [] {
        std::string full = Py_GetVersion();
        return full.substr(0, full.find(' '));
    }();
    return version.c_str();
}

} // namespace

void open_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (PyFrameObject* f : frames) {
            const CodeInfo* info = info_for_frame(f);
            if (is_traced(info))
                s_state.emitter->call(*info);
        }
        release(frames);
    } catch (const std::bad_alloc&) {
        // The stack stays unannounced; its returns will show as unmatched.
    }
}

void close_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
            const CodeInfo* info = info_for_frame(*it);
            if (is_traced(info))
                s_state.emitter->ret(*info, false);
        }
        release(frames);
    } catch (const std::bad_alloc&) {
    }
}

void switch_stacks(PyFrameObject* origin, PyFrameObject* target) noexcept
{
    if (!s_state.is_active || !s_state.is_hooked)
        return;
    if (origin != nullptr) {
        if (s_state.options.c_calls && is_traced(info_for_frame(origin)))
            s_state.emitter->c_return(false);
        close_stack(origin);
    }
    if (target != nullptr) {
        open_stack(target);
        if (s_state.options.c_calls && is_traced(info_for_frame(target)))
            s_state.emitter->c_call("switch", "greenlet.greenlet");
    }
}

void hide_stack(PyFrameObject* frame) noexcept
{
    try {
        std::vector<PyFrameObject*> frames = stack_of(frame);
        for (PyFrameObject* f : frames) {
            PyCodeObject* code = PyFrame_GetCode(f);
            hide_code(code);
            Py_DECREF(code);
        }
        release(frames);
    } catch (...) {
    }
}

PyFrameObject* open_part(PyFrameObject* frame, bool skip_top) noexcept
{
    if (frame == nullptr)
        return nullptr;
    if (skip_top)
        return PyFrame_GetBack(frame);
    Py_INCREF(frame);
    return frame;
}

void emit_process() noexcept
{
    s_state.emitter->process(python_version(), backend::name(), s_state.options.lines,
                             s_state.options.c_calls, s_state.command.c_str());
}

void rundown() noexcept
{
    if (!s_state.is_initialised)
        return;
    emit_process();
    s_state.registry->for_each_thread([](std::int64_t tid, const std::string& name) {
        s_state.emitter->thread(tid, name.c_str());
    });
    s_state.registry->for_each_code([](const CodeInfo& info) {
        if ((info.trace & k_traced) != 0 || info.root_generation == s_state.generation)
            s_state.emitter->code(info);
    });
}

} // namespace pyust::hook
