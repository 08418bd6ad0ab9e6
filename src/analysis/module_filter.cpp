// The module filter of the reports (see module_filter.hpp).
#include "analysis/module_filter.hpp"

#include <stdexcept>

#include "prefix/prefix_table.hpp"

namespace pyust::analysis {

namespace {

std::string_view trim(std::string_view text) noexcept
{
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos)
        return {};
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

} // namespace

ModuleFilter::ModuleFilter(std::string_view prefixes)
{
    while (true) {
        const auto comma = prefixes.find(',');
        const std::string_view name = trim(prefixes.substr(0, comma));
        if (!name.empty())
            m_prefixes.emplace_back(name);
        if (comma == std::string_view::npos)
            break;
        prefixes.remove_prefix(comma + 1);
    }
    if (m_prefixes.empty())
        throw std::invalid_argument(
            "no module prefix: give comma-separated module names, e.g. myproj,numpy");
}

bool ModuleFilter::shows_module(std::string_view module) const noexcept
{
    for (const std::string& prefix : m_prefixes)
        if (prefix::matches(prefix, module))
            return true;
    return false;
}

void ModuleFilter::on_code(std::uint64_t id, std::string_view module)
{
    m_code_shown[id] = shows_module(module);
}

bool ModuleFilter::shows_code(std::uint64_t id) const noexcept
{
    const auto it = m_code_shown.find(id);
    return it == m_code_shown.end() || it->second;
}

bool ModuleFilter::on_c_call(const ThreadKey& thread, std::string_view owner)
{
    const bool is_shown = shows_module(owner);
    m_open_c_calls[thread].push_back(is_shown);
    return is_shown;
}

bool ModuleFilter::on_c_return(const ThreadKey& thread) noexcept
{
    const auto it = m_open_c_calls.find(thread);
    if (it == m_open_c_calls.end() || it->second.empty())
        return true;
    const bool is_shown = it->second.back();
    it->second.pop_back();
    return is_shown;
}

} // namespace pyust::analysis
