// Which versions of babeltrace2's message interchange protocol (MIP) the plugin's components
// speak. MIP 0 is babeltrace2 2.0's; babeltrace2 2.1 adds MIP 1, which its CTF 2 reader needs
// (LTTng 2.15 and later write CTF 2), and puts components in one graph only if they share a
// version. Components that declare nothing are taken to speak MIP 0 alone, so each of ours
// declares both wherever the headers it is built against know of MIP 1 (PYUST_BT_HAS_MIP1,
// found by the build from the headers, not from a version number).
//
// What differs for our components: a clock class's identity (a UUID under MIP 0; a namespace,
// name and UID under MIP 1) and its optional properties, which stacks.cpp copies; the events,
// fields and messages they read and make are the same under both.
#pragma once

#include <babeltrace2/babeltrace.h>

namespace pyust::plugin {

#if PYUST_BT_HAS_MIP1
// The "get supported MIP versions" method of every component class of ours: MIP 0 and 1,
// whatever the parameters. SelfClass is the source, filter or sink self component class.
template <typename SelfClass>
bt_component_class_get_supported_mip_versions_method_status
supported_mip_versions(SelfClass* /*self_class*/, const bt_value* /*params*/,
                       void* /*initialize_method_data*/, bt_logging_level /*logging_level*/,
                       bt_integer_range_set_unsigned* supported_versions) noexcept
{
    if (bt_integer_range_set_unsigned_add_range(supported_versions, 0, 1) !=
        BT_INTEGER_RANGE_SET_ADD_RANGE_STATUS_OK)
        return BT_COMPONENT_CLASS_GET_SUPPORTED_MIP_VERSIONS_METHOD_STATUS_MEMORY_ERROR;
    return BT_COMPONENT_CLASS_GET_SUPPORTED_MIP_VERSIONS_METHOD_STATUS_OK;
}
#endif

} // namespace pyust::plugin
