// Component parameters (see params.hpp).
#include "plugin/common/params.hpp"

#include <cstring>
#include <limits>
#include <string_view>

#include "plugin/common/bt_util.hpp"

namespace pyust::plugin {

namespace {

struct UnknownSearch {
    std::initializer_list<const char*> known;
    const char* unknown = nullptr;
};

bt_value_map_foreach_entry_const_func_status find_unknown(const char* key, const bt_value*,
                                                          void* data)
{
    auto* search = static_cast<UnknownSearch*>(data);
    for (const char* name : search->known)
        if (std::strcmp(name, key) == 0)
            return BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_OK;
    search->unknown = key;
    return BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_INTERRUPT;
}

const bt_value* borrow(const bt_value* params, const char* name) noexcept
{
    if (!params || !bt_value_is_map(params))
        return nullptr;
    return bt_value_map_borrow_entry_value_const(params, name);
}

} // namespace

void check_known_params(const bt_value* params, std::initializer_list<const char*> known)
{
    if (!params || !bt_value_is_map(params))
        return;
    UnknownSearch search{known};
    bt_value_map_foreach_entry_const(params, find_unknown, &search);
    if (search.unknown) {
        std::string expected;
        for (const char* name : known)
            expected += std::string(expected.empty() ? "" : "|") + name;
        throw Error(std::string("unknown parameter: name=") + search.unknown +
                    ", expected=" + (expected.empty() ? "no parameter" : expected));
    }
}

std::optional<std::string> string_param(const bt_value* params, const char* name)
{
    const bt_value* value = borrow(params, name);
    if (!value)
        return std::nullopt;
    if (!bt_value_is_string(value))
        throw Error(std::string("bad parameter type: name=") + name + ", expected=string");
    return std::string(bt_value_string_get(value));
}

std::optional<std::int64_t> int_param(const bt_value* params, const char* name)
{
    const bt_value* value = borrow(params, name);
    if (!value)
        return std::nullopt;
    if (bt_value_is_signed_integer(value))
        return bt_value_integer_signed_get(value);
    if (bt_value_is_unsigned_integer(value)) {
        const std::uint64_t number = bt_value_integer_unsigned_get(value);
        if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            throw Error(std::string("parameter out of range: name=") + name +
                        ", value=" + std::to_string(number));
        return static_cast<std::int64_t>(number);
    }
    throw Error(std::string("bad parameter type: name=") + name + ", expected=integer");
}

std::optional<bool> bool_param(const bt_value* params, const char* name)
{
    const bt_value* value = borrow(params, name);
    if (!value)
        return std::nullopt;
    if (!bt_value_is_bool(value))
        throw Error(std::string("bad parameter type: name=") + name + ", expected=yes|no");
    return bt_value_bool_get(value) == BT_TRUE;
}

} // namespace pyust::plugin
