// sink.pyust.report: rebuilds the Python stacks of every thread from the python:* events it
// consumes and, at the end, writes one report (src/analysis/reports.hpp) to a file or stdout.
//
// Parameters:
//   format        profile (default) | tree | folded | lines | chrome | svg
//   output        path of the file to write (default: standard output)
//   pid, tid      only this process / thread
//   begin, end    only this time window, in ns from the clock's origin (frames are clipped)
//   min-duration  leave out frames / call paths shorter than this many ns (tree, folded,
//                 chrome, svg)
//   modules       comma-separated module-name prefixes: show only the frames of these modules
//                 (and C functions of these owners); see src/analysis/module_filter.hpp
// What was incomplete (mid-call start, frames open at the end, lost events) goes at the end of
// the profile, tree and lines reports, into the Chrome JSON's otherData, and to standard error
// for folded and svg, whose formats have no place for it.
//
// Each function below is the noexcept bridge of one C callback.
#pragma once

#include <babeltrace2/babeltrace.h>

namespace pyust::plugin::report {

// Checks the parameters, opens the output and adds the input port "in".
bt_component_class_initialize_method_status
initialize(bt_self_component_sink* self, bt_self_component_sink_configuration* configuration,
           const bt_value* params, void* data) noexcept;

// Creates the upstream message iterator.
bt_component_class_sink_graph_is_configured_method_status
graph_is_configured(bt_self_component_sink* self) noexcept;

// Consumes one batch of messages; writes the report when upstream ends.
bt_component_class_sink_consume_method_status consume(bt_self_component_sink* self) noexcept;

// Releases the component's state.
void finalize(bt_self_component_sink* self) noexcept;

} // namespace pyust::plugin::report
