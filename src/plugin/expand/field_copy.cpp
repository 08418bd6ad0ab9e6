// copy_field() and same_value() (see field_copy.hpp): one branch per field class type.
#include "plugin/expand/field_copy.hpp"

#include <string_view>

#include "plugin/common/bt_util.hpp"

namespace pyust::plugin::expand {

void copy_field(bt_field* dst, const bt_field* src)
{
    const bt_field_class_type type = bt_field_get_class_type(src);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BOOL)) {
        bt_field_bool_set_value(dst, bt_field_bool_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BIT_ARRAY)) {
        bt_field_bit_array_set_value_as_integer(dst, bt_field_bit_array_get_value_as_integer(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
        bt_field_integer_signed_set_value(dst, bt_field_integer_signed_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
        bt_field_integer_unsigned_set_value(dst, bt_field_integer_unsigned_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL)) {
        bt_field_real_single_precision_set_value(dst,
                                                 bt_field_real_single_precision_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL)) {
        bt_field_real_double_precision_set_value(dst,
                                                 bt_field_real_double_precision_get_value(src));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRING)) {
        check(bt_field_string_set_value(dst, bt_field_string_get_value(src)),
              "Cannot copy a string field");
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRUCTURE)) {
        const std::uint64_t count =
            bt_field_class_structure_get_member_count(bt_field_borrow_class_const(src));
        for (std::uint64_t i = 0; i < count; ++i)
            copy_field(bt_field_structure_borrow_member_field_by_index(dst, i),
                       bt_field_structure_borrow_member_field_by_index_const(src, i));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_ARRAY)) {
        const std::uint64_t length = bt_field_array_get_length(src);
        if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY))
            check(bt_field_array_dynamic_set_length(dst, length),
                  "Cannot copy a dynamic array field");
        for (std::uint64_t i = 0; i < length; ++i)
            copy_field(bt_field_array_borrow_element_field_by_index(dst, i),
                       bt_field_array_borrow_element_field_by_index_const(src, i));
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_OPTION)) {
        const bt_field* inner = bt_field_option_borrow_field_const(src);
        bt_field_option_set_has_field(dst, inner != nullptr);
        if (inner)
            copy_field(bt_field_option_borrow_field(dst), inner);
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_VARIANT)) {
        check(bt_field_variant_select_option_by_index(
                  dst, bt_field_variant_get_selected_option_index(src)),
              "Cannot copy a variant field");
        copy_field(bt_field_variant_borrow_selected_option_field(dst),
                   bt_field_variant_borrow_selected_option_field_const(src));
    }
}

// Whether two fields of the same class hold the same value. noexcept.
bool same_value(const bt_field* a, const bt_field* b) noexcept
{
    const bt_field_class_type type = bt_field_get_class_type(a);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BOOL))
        return bt_field_bool_get_value(a) == bt_field_bool_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_BIT_ARRAY))
        return bt_field_bit_array_get_value_as_integer(a) ==
               bt_field_bit_array_get_value_as_integer(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
        return bt_field_integer_signed_get_value(a) == bt_field_integer_signed_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
        return bt_field_integer_unsigned_get_value(a) == bt_field_integer_unsigned_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL))
        return bt_field_real_single_precision_get_value(a) ==
               bt_field_real_single_precision_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL))
        return bt_field_real_double_precision_get_value(a) ==
               bt_field_real_double_precision_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRING))
        return bt_field_string_get_length(a) == bt_field_string_get_length(b) &&
               std::string_view(bt_field_string_get_value(a)) == bt_field_string_get_value(b);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_STRUCTURE)) {
        const std::uint64_t count =
            bt_field_class_structure_get_member_count(bt_field_borrow_class_const(a));
        for (std::uint64_t i = 0; i < count; ++i)
            if (!same_value(bt_field_structure_borrow_member_field_by_index_const(a, i),
                            bt_field_structure_borrow_member_field_by_index_const(b, i)))
                return false;
        return true;
    }
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_ARRAY)) {
        const std::uint64_t length = bt_field_array_get_length(a);
        if (bt_field_array_get_length(b) != length)
            return false;
        for (std::uint64_t i = 0; i < length; ++i)
            if (!same_value(bt_field_array_borrow_element_field_by_index_const(a, i),
                            bt_field_array_borrow_element_field_by_index_const(b, i)))
                return false;
        return true;
    }
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_OPTION)) {
        const bt_field* inner_a = bt_field_option_borrow_field_const(a);
        const bt_field* inner_b = bt_field_option_borrow_field_const(b);
        return inner_a && inner_b ? same_value(inner_a, inner_b) : inner_a == inner_b;
    }
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_VARIANT))
        return bt_field_variant_get_selected_option_index(a) ==
                   bt_field_variant_get_selected_option_index(b) &&
               same_value(bt_field_variant_borrow_selected_option_field_const(a),
                          bt_field_variant_borrow_selected_option_field_const(b));
    return true; // no other field class holds a value
}

} // namespace pyust::plugin::expand
