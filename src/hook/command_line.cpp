#include "hook/command_line.hpp"

#include <cstdio>
#include <cstring>

namespace pyust::hook {

namespace {

// Characters a shell takes literally anywhere in a word.
bool is_plain(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c >= 0x80 || std::strchr("@%+=:,./-_", c) != nullptr;
}

void append_word(std::string& out, const std::string& word)
{
    bool is_safe = !word.empty();
    for (const char c : word)
        is_safe = is_safe && is_plain(static_cast<unsigned char>(c));
    if (is_safe) {
        out += word;
        return;
    }
    out += '\'';
    for (const char c : word) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += '\'';
}

} // namespace

std::string join_command(const std::vector<std::string>& words, std::size_t limit)
{
    std::string out;
    for (const std::string& word : words) {
        if (!out.empty())
            out += ' ';
        append_word(out, word);
        if (out.size() > limit)
            break;
    }
    if (out.size() <= limit)
        return out;
    constexpr char ellipsis[] = "...";
    std::size_t end = limit > 3 ? limit - 3 : 0;
    // Never cut a UTF-8 sequence: back up to the start of the character.
    while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80)
        --end;
    out.resize(end);
    out += ellipsis;
    return out;
}

std::vector<std::string> read_own_cmdline()
{
    std::vector<std::string> words;
    std::FILE* stream = std::fopen("/proc/self/cmdline", "rbe");
    if (stream == nullptr)
        return words;
    std::string all;
    char buffer[4096];
    std::size_t count = 0;
    while ((count = std::fread(buffer, 1, sizeof buffer, stream)) > 0)
        all.append(buffer, count);
    std::fclose(stream);
    std::size_t begin = 0;
    while (begin < all.size()) {
        const std::size_t end = all.find('\0', begin);
        words.push_back(
            all.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
        if (end == std::string::npos)
            break;
        begin = end + 1;
    }
    return words;
}

} // namespace pyust::hook
