// Which frames a report shows when the user names modules (sink.pyust.report's `modules`,
// `pyust report --modules`). Frames of other modules are left out of the stacks: their time
// counts as the self time of the nearest shown caller, and the shown functions they call appear
// as that caller's children, as if the hidden frames were inlined.
//
// A Python frame is shown when the module of its code (python:code's `module`) matches one of
// the prefixes on a dotted boundary (src/prefix's rules: `numpy` matches `numpy.core`, never
// `numpyro`); a C frame when its owner (a module or a type, python:c_call's `owner`) does. A code
// id no python:code event named is shown (as `<unknown 0x...>`): hiding it could hide an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/stack_model.hpp"

namespace pyust::analysis {

class ModuleFilter {
public:
    // A filter from a comma-separated list of module-name prefixes ("myproj,numpy"); blanks
    // around the names are ignored. Throws std::invalid_argument naming the fix when the list
    // holds no prefix, std::bad_alloc.
    explicit ModuleFilter(std::string_view prefixes);

    // The prefixes, in the order given. noexcept.
    const std::vector<std::string>& prefixes() const noexcept { return m_prefixes; }

    // Whether a frame of module (or owner) is shown. noexcept.
    bool shows_module(std::string_view module) const noexcept;

    // python:code: takes the verdict of a code id (a later registration replaces it).
    // Throws std::bad_alloc.
    void on_code(std::uint64_t id, std::string_view module);

    // Whether the call, return or line events of a code id are shown. noexcept.
    bool shows_code(std::uint64_t id) const noexcept;

    // python:c_call of a thread: whether it is shown; remembered until its c_return.
    // Throws std::bad_alloc.
    bool on_c_call(const ThreadKey& thread, std::string_view owner);

    // python:c_return of a thread: whether the C call it closes was shown (true when no C call
    // of this thread is open, so that the model records the unmatched return). noexcept.
    bool on_c_return(const ThreadKey& thread) noexcept;

private:
    std::vector<std::string> m_prefixes;
    std::unordered_map<std::uint64_t, bool> m_code_shown;
    std::unordered_map<ThreadKey, std::vector<bool>, ThreadKeyHash> m_open_c_calls;
};

} // namespace pyust::analysis
