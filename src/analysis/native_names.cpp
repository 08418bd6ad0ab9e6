#include "analysis/native_names.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace pyust::analysis {

namespace {

bool is_digit(char c) noexcept
{
    return c >= '0' && c <= '9';
}

bool is_identifier_char(char c) noexcept
{
    return is_digit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The length of the run of digits that text starts with.
std::size_t digit_count(std::string_view text) noexcept
{
    std::size_t count = 0;
    while (count < text.size() && is_digit(text[count]))
        ++count;
    return count;
}

// The last part of a Cython name, without the counter Cython puts before it ("1cy_entry" reads
// "cy_entry"), or "" when nothing is left: then the text is not a last part.
std::string_view last_part(std::string_view text) noexcept
{
    text.remove_prefix(digit_count(text));
    if (text.empty() || !is_identifier_char(text.front()))
        return {};
    return text;
}

// Length-prefixed scopes (module and class names, "3nat_3Bar_") and a last part, after
// Cython's prefix. Empty when text is not such a name.
std::vector<std::string_view> cython_parts(std::string_view text)
{
    std::vector<std::string_view> parts;
    for (;;) {
        const std::size_t digits = digit_count(text);
        if (digits > 0 && digits <= 4) {
            std::size_t length = 0;
            for (std::size_t i = 0; i < digits; ++i)
                length = length * 10 + static_cast<std::size_t>(text[i] - '0');
            // A scope is "<length><name>_" followed by what still makes a name.
            if (length > 0 && text.size() > digits + length + 1 && text[digits + length] == '_' &&
                !last_part(text.substr(digits + length + 1)).empty()) {
                const std::string_view scope = text.substr(digits, length);
                bool valid = true;
                for (const char c : scope)
                    valid = valid && is_identifier_char(c);
                if (valid) {
                    parts.push_back(scope);
                    text.remove_prefix(digits + length + 1);
                    continue;
                }
            }
        }
        const std::string_view last = last_part(text);
        for (const char c : last) {
            if (!is_identifier_char(c))
                return {};
        }
        if (last.empty() || parts.empty()) // every function is in a module scope
            return {};
        parts.push_back(last);
        return parts;
    }
}

bool starts_with(std::string_view text, std::string_view prefix) noexcept
{
    return text.substr(0, prefix.size()) == prefix;
}

} // namespace

std::string_view without_clone_suffix(std::string_view symbol) noexcept
{
    const std::size_t dot = symbol.find('.');
    if (dot == std::string_view::npos || dot == 0)
        return symbol;
    return symbol.substr(0, dot);
}

std::string cython_python_name(std::string_view symbol)
{
    // The module's initialisation (its top-level code).
    constexpr std::string_view module_exec = "__pyx_pymod_exec_";
    if (starts_with(symbol, module_exec) && symbol.size() > module_exec.size())
        return std::string(symbol.substr(module_exec.size())) + ".<module>";
    // Python wrappers (pw), their implementations (pf), C functions (f), generator bodies (gb),
    // and a cdef class's allocation and deallocation (the class's name, then a suffix).
    static constexpr struct {
        std::string_view prefix;
        std::string_view suffix;
    } kinds[] = {{"__pyx_pw_", ""},
                 {"__pyx_pf_", ""},
                 {"__pyx_f_", ""},
                 {"__pyx_gb_", ""},
                 {"__pyx_tp_new_", ".__new__"},
                 {"__pyx_tp_dealloc_", ".__dealloc__"}};
    for (const auto& [prefix, suffix] : kinds) {
        if (!starts_with(symbol, prefix))
            continue;
        const std::vector<std::string_view> parts = cython_parts(symbol.substr(prefix.size()));
        if (parts.empty())
            return {};
        std::string name;
        for (const std::string_view part : parts) {
            if (!name.empty())
                name.push_back('.');
            // `lambda` is a keyword: no def has that name.
            name.append(part == "lambda" ? std::string_view("<lambda>") : part);
        }
        return name.append(suffix);
    }
    return {};
}

std::string readable_native_name(std::string_view symbol)
{
    const std::string_view base = without_clone_suffix(symbol);
    if (std::string cython = cython_python_name(base); !cython.empty())
        return cython;
    if (starts_with(base, "_Z")) {
        const std::string mangled(base);
        int status = 0;
        const std::unique_ptr<char, decltype(&std::free)> demangled(
            abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
        if (status == 0 && demangled)
            return demangled.get();
        return std::string(symbol); // not a C++ name after all: as the binary says
    }
    return std::string(base);
}

} // namespace pyust::analysis
