// Code-object and thread registry of the hook (see registry.hpp).
#include "hook/registry.hpp"

#include <limits>
#include <stdexcept>
#include <utility>

namespace pyust::hook {

CodeInfo& Registry::add(std::string module, std::string qualname, std::string file,
                        std::uint32_t first_line, bool is_traced, std::string name)
{
    if (module.empty())
        module = "?";
    if (qualname.empty())
        qualname = "?";
    if (file.empty())
        file = k_no_file_name;
    if (name.empty()) {
        const std::size_t dot = qualname.rfind('.');
        name = dot == std::string::npos ? qualname : qualname.substr(dot + 1);
        if (name.empty())
            name = "?";
    }
    if (m_next_seq == std::numeric_limits<std::uint32_t>::max())
        throw std::length_error("Cannot register code object: this process used every id");
    CodeInfo& info = m_codes.emplace_back();
    info.id = make_code_id(m_pid, m_next_seq++);
    info.trace = is_traced ? k_traced : 0;
    info.module = std::move(module);
    info.qualname = std::move(qualname);
    info.file = std::move(file);
    info.first_line = first_line;
    info.name = std::move(name);
    return info;
}

void Registry::set_thread_name(std::int64_t tid, std::string name)
{
    m_threads[tid] = std::move(name);
}

void Registry::after_fork_child(std::uint32_t pid) noexcept
{
    m_pid = pid;
    m_next_seq = 1;
    m_threads.clear();
}

} // namespace pyust::hook
