// Copying and comparing the values of babeltrace2 fields of one class, and setting the members
// of the events filter.pyust.expand makes (the debug-info component's field-copy unit, reduced
// to what copying a common context needs).
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>

#include "plugin/common/fields.hpp"

namespace pyust::plugin::expand {

// Sets an integer field from a value, whatever its signedness. Precondition: field is an
// integer field. noexcept.
inline void set_int(bt_field* field, std::int64_t value) noexcept
{
    if (bt_field_class_type_is(bt_field_get_class_type(field), BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
        bt_field_integer_signed_set_value(field, value);
    else
        bt_field_integer_unsigned_set_value(field, static_cast<std::uint64_t>(value));
}

// The member of a structure field. Precondition: member is present in structure's class.
// noexcept.
inline bt_field* member_of(bt_field* structure, const FieldMember& member) noexcept
{
    return bt_field_structure_borrow_member_field_by_index(
        structure, static_cast<std::uint64_t>(member.index));
}

// Copies the value of src into dst, a field of the same class. Throws BtError,
// std::bad_alloc.
void copy_field(bt_field* dst, const bt_field* src);

// Whether two fields of the same class hold the same value. noexcept.
bool same_value(const bt_field* a, const bt_field* b) noexcept;

} // namespace pyust::plugin::expand
