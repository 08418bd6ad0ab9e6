// sink.pyust.report's account of a damaged trace (see damage.hpp).
#include "plugin/report/damage.hpp"

#include <cctype>
#include <memory>
#include <string_view>

#include "analysis/reports.hpp"
#include "analysis/stack_model.hpp"

namespace pyust::plugin::report {

namespace {

// text without the "name-addr=0x..., " pairs of babeltrace2's error messages: object addresses
// mean nothing to the reader of a report. Throws std::bad_alloc.
std::string without_addresses(const std::string& text)
{
    static constexpr std::string_view marker = "-addr=0x";
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = text.find(marker, from)) != std::string::npos;) {
        std::size_t begin = at;
        while (begin > from && (std::isalnum(static_cast<unsigned char>(text[begin - 1])) ||
                                text[begin - 1] == '-' || text[begin - 1] == '_'))
            --begin;
        std::size_t end = at + marker.size();
        while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end])))
            ++end;
        if (text.compare(end, 2, ", ") == 0)
            end += 2;
        out.append(text, from, begin - from);
        from = end;
    }
    out.append(text, from, std::string::npos);
    while (!out.empty() && (out.back() == ' ' || out.back() == ','))
        out.pop_back();
    return out;
}

} // namespace

std::string take_upstream_error()
{
    const std::unique_ptr<const bt_error, decltype(&bt_error_release)> error(
        bt_current_thread_take_error(), bt_error_release);
    std::string reason = "unknown error";
    // The first cause is the innermost: what the source could not decode. It is printed on one
    // line, and a name it quotes from the trace cannot drive a terminal.
    if (error && bt_error_get_cause_count(error.get()) > 0) {
        const char* message =
            bt_error_cause_get_message(bt_error_borrow_cause_by_index(error.get(), 0));
        reason.clear();
        for (const char* c = message; *c; ++c) {
            const auto byte = static_cast<unsigned char>(*c);
            reason += byte < 0x20 || byte == 0x7f ? ' ' : *c;
        }
    }
    return analysis::valid_utf8(without_addresses(reason));
}

std::string damage_text(std::uint64_t events_read, analysis::Timestamp last_ts,
                        const std::string& reason)
{
    return "babeltrace2 stopped reading after " + std::to_string(events_read) +
           " events (the latest at " +
           (last_ts == INT64_MIN ? std::string("none") : analysis::format_time(last_ts)) +
           "): " + reason;
}

} // namespace pyust::plugin::report
