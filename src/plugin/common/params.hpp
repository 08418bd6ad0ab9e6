// Reading component parameters (a babeltrace2 map value) with errors that name the parameter,
// the value and what was expected.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace pyust::plugin {

// Throws Error naming the first parameter of params (a map, or null) not in known.
void check_known_params(const bt_value* params, std::initializer_list<const char*> known);

// The string parameter name, if given. Throws Error when it is not a string, std::bad_alloc.
std::optional<std::string> string_param(const bt_value* params, const char* name);

// The integer parameter name (signed or unsigned), if given. Throws Error when it is not an
// integer or does not fit an int64_t.
std::optional<std::int64_t> int_param(const bt_value* params, const char* name);

// The boolean parameter name (`-p name=yes`), if given. Throws Error when it is not a boolean.
std::optional<bool> bool_param(const bt_value* params, const char* name);

} // namespace pyust::plugin
