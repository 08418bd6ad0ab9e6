// Names read from a trace made safe to print (see printable(), readable() and valid_utf8() in
// stack_model.hpp): what every report writes of a trace's names goes through these.
#include <algorithm>
#include <string>
#include <string_view>

#include "analysis/stack_model.hpp"

namespace pyust::analysis {

namespace {

// How many bytes the UTF-8 character at text[at] takes, or 0 when the bytes there are not one
// (RFC 3629: no overlong form (C0, C1; E0 80..9F; F0 80..8F), no surrogate (ED A0..BF), nothing
// past U+10FFFF (F4 90..; F5..FF), no stray or missing continuation byte).
std::size_t utf8_length(std::string_view text, std::size_t at) noexcept
{
    const auto byte = static_cast<unsigned char>(text[at]);
    const std::size_t length = byte < 0x80                   ? 1
                               : byte >= 0xc2 && byte < 0xe0 ? 2
                               : byte >= 0xe0 && byte < 0xf0 ? 3
                               : byte >= 0xf0 && byte < 0xf5 ? 4
                                                             : 0;
    if (length == 0 || at + length > text.size())
        return 0;
    for (std::size_t k = 1; k < length; ++k)
        if ((static_cast<unsigned char>(text[at + k]) & 0xc0) != 0x80)
            return 0;
    if (length > 2) {
        const auto second = static_cast<unsigned char>(text[at + 1]);
        if ((byte == 0xe0 && second < 0xa0) || (byte == 0xed && second >= 0xa0) ||
            (byte == 0xf0 && second < 0x90) || (byte == 0xf4 && second >= 0x90))
            return 0;
    }
    return length;
}

// Whether the valid character at text[at], length bytes, must be escaped all the same: C0
// controls, DEL, ';' (folded's separator), C1 controls (U+0080..U+009F: 8-bit terminal
// controls), U+2028 and U+2029 (line breaks to JavaScript and to some viewers), U+FFFE and U+FFFF
// (not characters of XML 1.0).
bool is_escaped(std::string_view text, std::size_t at, std::size_t length) noexcept
{
    const auto byte = static_cast<unsigned char>(text[at]);
    const auto second = length > 1 ? static_cast<unsigned char>(text[at + 1]) : 0;
    const auto third = length > 2 ? static_cast<unsigned char>(text[at + 2]) : 0;
    switch (length) {
    case 1:
        return byte < 0x20 || byte == 0x7f || byte == ';';
    case 2:
        return byte == 0xc2 && second < 0xa0;
    case 3:
        return (byte == 0xe2 && second == 0x80 && (third == 0xa8 || third == 0xa9)) ||
               (byte == 0xef && second == 0xbf && third >= 0xbe);
    default:
        return false;
    }
}

void append_escape(std::string& out, unsigned char byte)
{
    static constexpr char digits[] = "0123456789abcdef";
    out += "\\x";
    out += digits[byte >> 4];
    out += digits[byte & 0xf];
}

} // namespace

std::string valid_utf8(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t length = utf8_length(text, i);
        if (length == 0) {
            append_escape(out, static_cast<unsigned char>(text[i]));
            ++i;
        } else {
            out.append(text, i, length);
            i += length;
        }
    }
    return out;
}

namespace {

// printable() and readable(): is_prose keeps ';' and writes \n, \t, \r as C does.
std::string escaped(std::string_view name, bool is_prose)
{
    std::string out;
    out.reserve(name.size());
    for (std::size_t i = 0; i < name.size();) {
        const std::size_t length = utf8_length(name, i);
        const char c = name[i];
        if (is_prose && length == 1 && (c == ';' || c == '\n' || c == '\t' || c == '\r')) {
            out += c == ';' ? ";" : c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
            ++i;
        } else if (length == 0 || is_escaped(name, i, length)) {
            for (const std::size_t end = i + std::max<std::size_t>(length, 1); i < end; ++i)
                append_escape(out, static_cast<unsigned char>(name[i]));
        } else {
            out.append(name, i, length);
            i += length;
        }
    }
    return out;
}

} // namespace

std::string printable(std::string_view name)
{
    return escaped(name, false);
}

std::string readable(std::string_view text)
{
    return escaped(text, true);
}

} // namespace pyust::analysis
