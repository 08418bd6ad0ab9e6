// Registration of code objects (see registration.hpp): the first event of a
// code object registers it and takes its verdict; later events find the
// CodeInfo cached on the code object.
//
// Hot path: a back end looks up the CodeInfo pointer cached on the code object
// (co_extra) and hands it to the Emitter. The first event of a code object
// registers it (allocations happen there, once per code object). Nothing here
// raises into the traced program: any C-API failure is cleared and the event
// is named "?".
#include "hook/registration.hpp"

#include <string_view>
#include <unordered_map>
#include <vector>

#include "hook/backend.hpp"
#include "hook/state.hpp"
#include "hook/tasks.hpp"

namespace pyust::hook {

namespace {

const char* const k_unknown = "?";

// UTF-8 of a str object, or "?" (the object's cache keeps the bytes alive as
// long as the object lives; callers copy them).
const char* utf8_or_unknown(PyObject* obj) noexcept
{
    if (obj == nullptr || !PyUnicode_Check(obj))
        return k_unknown;
    const char* text = PyUnicode_AsUTF8(obj);
    if (text == nullptr) {
        PyErr_Clear();
        return k_unknown;
    }
    return text;
}

bool starts_with(const std::string& text, const std::string& prefix) noexcept
{
    return !prefix.empty() && text.compare(0, prefix.size(), prefix) == 0;
}

// Takes the code object's verdict under the current filter (pyust's own code
// is never traced) and registers it in the trace when it becomes traced.
void decide(CodeInfo& info) noexcept
{
    const bool was_traced = (info.trace & k_traced) != 0;
    info.generation = s_state.generation;
    const bool is_traced = !info.is_hidden && !starts_with(info.file, s_state.own_dir) &&
                           !starts_with(info.file, s_state.options.hidden_dir) &&
                           s_state.filter.is_traced(info.module);
    info.trace = static_cast<std::uint8_t>((info.trace & ~k_traced) | (is_traced ? k_traced : 0));
    if (is_traced && !was_traced)
        s_state.emitter->code(info);
}

} // namespace

void register_root(CodeInfo& info) noexcept
{
    if ((info.trace & k_traced) != 0 || info.root_generation == s_state.generation)
        return;
    info.root_generation = s_state.generation;
    s_state.emitter->code(info);
}

namespace {

// globals["__name__"], or "?".
std::string module_of_globals(PyObject* globals)
{
    if (globals == nullptr || !PyDict_Check(globals))
        return k_unknown;
    return utf8_or_unknown(PyDict_GetItemString(globals, "__name__")); // borrowed
}

// The module of code that runs without a frame of its own: from Python 3.12 on,
// Cython 3.1's profiled functions report their calls through sys.monitoring,
// and the current frame is then their caller's. Cython records the file as the
// path it compiled ("src/pkg/mod.pyx", from wherever it ran): the module is the
// one of sys.modules whose dotted name ends with the most of that path's parts
// ("pkg.mod"), else the file's stem. Remembered per file once found. Throws
// std::bad_alloc.
std::string module_of_file(const std::string& file)
{
    static std::unordered_map<std::string, std::string> found;
    if (const auto it = found.find(file); it != found.end())
        return it->second;
    // The path's parts without the extension, the innermost first ("mod", "pkg", "src").
    std::string path = file;
    if (const std::size_t dot = path.rfind('.');
        dot != std::string::npos && path.find('/', dot) == std::string::npos)
        path.erase(dot);
    std::vector<std::string> parts;
    for (std::size_t end = path.size(); end > 0;) {
        const std::size_t slash = path.rfind('/', end - 1);
        const std::size_t begin = slash == std::string::npos ? 0 : slash + 1;
        if (end > begin)
            parts.push_back(path.substr(begin, end - begin));
        end = slash == std::string::npos ? 0 : slash;
    }
    if (!parts.empty() && parts.front() == "__init__")
        parts.erase(parts.begin());
    if (parts.empty() || parts.front()[0] == '<')
        return k_unknown;
    std::string best = parts.front();
    std::size_t best_shared = 0;
    PyObject* modules = PySys_GetObject("modules"); // borrowed
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t position = 0;
    while (modules != nullptr && PyDict_Check(modules) &&
           PyDict_Next(modules, &position, &key, &value)) {
        const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
        if (name == nullptr) {
            PyErr_Clear();
            continue;
        }
        // How many of the path's innermost parts the name ends with, part for part.
        const std::string_view dotted(name);
        std::size_t shared = 0;
        std::size_t end = dotted.size();
        while (shared < parts.size() && end > 0) {
            const std::size_t dot = dotted.rfind('.', end - 1);
            const std::size_t begin = dot == std::string_view::npos ? 0 : dot + 1;
            if (dotted.substr(begin, end - begin) != parts[shared])
                break;
            ++shared;
            end = dot == std::string_view::npos ? 0 : dot;
        }
        if (shared > best_shared && (end == 0 || shared == parts.size())) {
            best_shared = shared;
            best = name;
        }
    }
    if (best_shared > 0)
        found.emplace(file, best);
    return best;
}

// Registers a code object under the module that module_for() names (it may
// throw std::bad_alloc): assigns its id, decides whether it is traced, emits
// python:code. nullptr only when memory runs out.
template <typename ModuleFor>
CodeInfo* register_code(PyCodeObject* code, ModuleFor module_for) noexcept
{
    compat::SavedError saved;
    try {
        std::string file = utf8_or_unknown(code->co_filename);
        std::string module = module_for(file);
        CodeInfo& info =
            s_state.registry->add(std::move(module), utf8_or_unknown(compat::code_qualname(code)),
                                  std::move(file), static_cast<std::uint32_t>(code->co_firstlineno),
                                  false, utf8_or_unknown(code->co_name));
        const tasks::Role role = tasks::role_of(info.module, info.qualname);
        info.is_task_factory = role == tasks::Role::factory || role == tasks::Role::adopter;
        info.is_task_adopter = role == tasks::Role::adopter;
        info.is_step_runner = role == tasks::Role::step_runner;
        info.is_eager_probe = role == tasks::Role::eager_probe;
        info.is_coroutine = (code->co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE)) != 0;
        info.is_async_generator = (code->co_flags & CO_ASYNC_GENERATOR) != 0;
        if (info.is_task_factory || info.is_step_runner || info.is_eager_probe ||
            info.is_coroutine || info.is_async_generator)
            info.trace = k_asyncio;
        decide(info);
        compat::set_code_extra(code, s_state.extra_index, &info);
        return &info;
    } catch (...) {
        return nullptr;
    }
}

// The module of code run by frame (nullptr: the current frame, read without
// making it a frame object where the interpreter's frames can be read). Throws
// std::bad_alloc.
std::string module_in_frame(PyCodeObject* code, PyFrameObject* frame, const std::string& file)
{
    if constexpr (backend::k_reads_frames_in_place) {
        if (frame == nullptr) {
            PyObject* globals = nullptr;
            if (!backend::innermost_runs(reinterpret_cast<PyObject*>(code), globals))
                return k_unknown;
            return globals != nullptr ? module_of_globals(globals) : module_of_file(file);
        }
    }
    if (frame == nullptr)
        frame = PyEval_GetFrame(); // borrowed
    PyCodeObject* frame_code = frame != nullptr ? PyFrame_GetCode(frame) : nullptr;
    Py_XDECREF(frame_code); // only compared
    if (frame_code != nullptr && frame_code != code)
        return module_of_file(file); // not the frame of this code (see module_of_file)
    return module_of(frame);
}

} // namespace

std::string module_of(PyFrameObject* frame)
{
    if (frame == nullptr)
        return k_unknown;
    PyObject* globals = compat::frame_globals(frame);
    std::string module = module_of_globals(globals);
    Py_XDECREF(globals);
    return module;
}

CodeInfo* info_for_code(PyCodeObject* code, PyFrameObject* frame) noexcept
{
    auto* info = static_cast<CodeInfo*>(compat::get_code_extra(code, s_state.extra_index));
    if (info == nullptr)
        return register_code(
            code, [&](const std::string& file) { return module_in_frame(code, frame, file); });
    if (info->generation != s_state.generation)
        decide(*info);
    return info;
}

CodeInfo* info_for_code_in(PyCodeObject* code, PyObject* globals) noexcept
{
    auto* info = static_cast<CodeInfo*>(compat::get_code_extra(code, s_state.extra_index));
    if (info == nullptr)
        return register_code(code, [&](const std::string&) { return module_of_globals(globals); });
    if (info->generation != s_state.generation)
        decide(*info);
    return info;
}

CodeInfo* info_for_frame(PyFrameObject* frame) noexcept
{
    PyCodeObject* code = PyFrame_GetCode(frame);
    CodeInfo* info = info_for_code(code, frame);
    Py_DECREF(code);
    return info;
}

void hide_code(PyCodeObject* code) noexcept
{
    try {
        auto* info = static_cast<CodeInfo*>(compat::get_code_extra(code, s_state.extra_index));
        if (info == nullptr) {
            compat::SavedError saved;
            info = &s_state.registry->add(k_unknown, utf8_or_unknown(compat::code_qualname(code)),
                                          utf8_or_unknown(code->co_filename),
                                          static_cast<std::uint32_t>(code->co_firstlineno), false,
                                          utf8_or_unknown(code->co_name));
            compat::set_code_extra(code, s_state.extra_index, info);
        }
        info->is_hidden = true;
        info->trace = 0; // neither traced nor a task's root
    } catch (...) {
    }
}

void c_function_names(PyObject* callable, const char** name, const char** owner) noexcept
{
    *owner = "";
    if (PyCFunction_Check(callable)) {
        auto* function = reinterpret_cast<PyCFunctionObject*>(callable);
        *name = function->m_ml->ml_name;
        if (function->m_module != nullptr && PyUnicode_Check(function->m_module))
            *owner = utf8_or_unknown(function->m_module);
        else if (function->m_self != nullptr && !PyModule_Check(function->m_self))
            *owner = Py_TYPE(function->m_self)->tp_name;
    } else if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
        auto* descr = reinterpret_cast<PyMethodDescrObject*>(callable);
        *name = descr->d_method->ml_name;
        *owner = PyDescr_TYPE(descr)->tp_name;
    } else if (PyType_Check(callable)) {
        *name = reinterpret_cast<PyTypeObject*>(callable)->tp_name;
        *owner = "type";
    } else {
        *name = Py_TYPE(callable)->tp_name;
    }
}

} // namespace pyust::hook
