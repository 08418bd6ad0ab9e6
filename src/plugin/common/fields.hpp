// Reading the members of babeltrace2 structure fields by name: a member's
// position is looked up once per field class (find_member), then each event's
// value is a borrow and a read.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace pyust::plugin {

// Where a member is in its structure, and whether it is a signed integer.
struct FieldMember {
    int index = -1; // -1: absent
    bool is_signed = false;
};

// Finds a structure member by name; index -1 when the structure (may be null)
// or the member is absent. noexcept.
inline FieldMember find_member(const bt_field_class* structure, const char* name) noexcept
{
    FieldMember member;
    if (!structure)
        return member;
    const std::uint64_t count = bt_field_class_structure_get_member_count(structure);
    for (std::uint64_t i = 0; i < count; ++i) {
        const bt_field_class_structure_member* entry =
            bt_field_class_structure_borrow_member_by_index_const(structure, i);
        if (std::strcmp(bt_field_class_structure_member_get_name(entry), name) == 0) {
            const bt_field_class* type =
                bt_field_class_structure_member_borrow_field_class_const(entry);
            member.index = static_cast<int>(i);
            member.is_signed = bt_field_class_type_is(bt_field_class_get_type(type),
                                                      BT_FIELD_CLASS_TYPE_SIGNED_INTEGER);
            return member;
        }
    }
    return member;
}

// The member at index of a structure field. Precondition: index is a member's.
// noexcept.
inline const bt_field* member_field(const bt_field* structure, int index) noexcept
{
    return bt_field_structure_borrow_member_field_by_index_const(structure,
                                                                 static_cast<std::uint64_t>(index));
}

// An integer member's value (an unsigned one is cast). Precondition: member is
// present and an integer. noexcept.
inline std::int64_t read_int(const bt_field* structure, const FieldMember& member) noexcept
{
    const bt_field* field = member_field(structure, member.index);
    return member.is_signed ? bt_field_integer_signed_get_value(field)
                            : static_cast<std::int64_t>(bt_field_integer_unsigned_get_value(field));
}

// A string member's value; empty when the member is absent or not a string. The
// view lives as long as the field. noexcept.
inline std::string_view read_string(const bt_field* structure, const FieldMember& member) noexcept
{
    if (member.index < 0)
        return {};
    const bt_field* field = member_field(structure, member.index);
    if (bt_field_get_class_type(field) != BT_FIELD_CLASS_TYPE_STRING)
        return {};
    return std::string_view(bt_field_string_get_value(field), bt_field_string_get_length(field));
}

} // namespace pyust::plugin
