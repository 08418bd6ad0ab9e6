// Logging of pyust's components at the level the user chose for each one: babeltrace2's CLI
// sets it with --log-level (default WARNING, so warnings show unless the user asks for less),
// a bt2 graph with add_component(logging_level=...) (default NONE: nothing).
//
// libbabeltrace2's public API gives a component its level but no way to write a log line (its
// own components use macros internal to its source tree), so a line goes to standard error as
// plain text, "<component class>: <message>". The text is kept free of babeltrace2's log-line
// prefix on purpose: pyust report passes these lines on to the user, and drops lines in
// babeltrace2's log format before sink.pyust.report's damaged-trace warning
// (pyust/commands/report.py).
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdarg>
#include <cstdio>

namespace pyust::plugin {

class Log {
public:
    // The level of the component that self belongs to. noexcept.
    explicit Log(bt_self_message_iterator* self) noexcept
        : m_level(bt_component_get_logging_level(
              bt_self_component_as_component(bt_self_message_iterator_borrow_component(self))))
    {
    }

    // Whether a line of level is written. noexcept.
    bool is_enabled(bt_logging_level level) const noexcept
    {
        return m_level != BT_LOGGING_LEVEL_NONE && level >= m_level;
    }

    // Writes a printf-style line (format ends with its '\n') to standard error when level is
    // enabled. noexcept.
    __attribute__((format(printf, 3, 4))) void write(bt_logging_level level, const char* format,
                                                     ...) const noexcept
    {
        if (!is_enabled(level))
            return;
        std::va_list arguments;
        va_start(arguments, format);
        std::vfprintf(stderr, format, arguments);
        va_end(arguments);
    }

private:
    bt_logging_level m_level;
};

} // namespace pyust::plugin
