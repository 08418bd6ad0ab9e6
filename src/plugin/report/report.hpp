// sink.pyust.report: rebuilds the Python stacks of every thread from the python:* events it
// consumes and, at the end, writes one report (src/analysis/reports.hpp) to a file or stdout.
//
// Parameters:
//   format        profile (default) | tree | folded | lines | chrome | svg | top | tasks
//   output        path of the file to write (default: standard output): a new file beside it,
//                 renamed over it once complete; a link there is replaced, not followed
//                 (report/output_file.hpp)
//   pid, tid      only this process / thread; when no event matches, the sink fails with the
//                 processes (command name and script) and threads the trace holds
//   begin, end    only this time window, in ns from the clock's origin (frames are clipped)
//   min-duration  leave out frames / call paths shorter than this many ns (tree, folded,
//                 chrome, svg)
//   modules       comma-separated module-name prefixes: show only the frames of these modules
//                 (and C functions of these owners); see src/analysis/module_filter.hpp
//   sort          self (default) | total | calls | mean: the order of the profile and lines rows
//   limit         profile, lines: rows at most (per process for the profile; 0: all); tasks:
//                 tasks per thread, those that ran longest
//   min-share     tree, tasks: a percentage, as a string ("0.5"): shorter call paths are left
//                 out
//   tasks         tree, folded, svg: yes puts asyncio tasks' frames under their creators'
//   max-size      bytes (default 0: no limit): chrome leaves out the frames that start after
//                 the output reached it; every other format stops writing lines there and says
//                 how many it left out (src/analysis/reports.hpp ReportOptions::max_bytes)
//   max-depth     tree, folded, svg, tasks: call paths deeper than this many frames are cut,
//                 what a frame at that depth calls shown as one "[... N frames cut]" (default
//                 0: none)
//   merge-processes  yes: one profile for every process; folded stacks without their process
//   raw-names     yes: native frames by their symbols, not readable names (native_names.hpp)
//   period        top: ns of wall time between tables (default 1 s); a live source that has
//                 nothing new makes the graph call again after a pause, so tables keep coming
//   count         top: stop (end the graph's sink) after this many tables (default: at the end)
//   rows          top: functions per table (default 0: all)
// top writes, every period, the table of the interval (src/analysis/reports.hpp write_top),
// with the frames still open counted up to the latest event or inactivity time; on a terminal
// each table replaces the previous one. It names code first seen by its call (a live reader
// joins after the python:code events of running code) from that call, as "?:qualname".
// What was incomplete (mid-call start, frames open at the end, lost events) goes at the end of
// the profile, tree and lines reports, into the Chrome JSON's otherData, and to standard error
// for folded and svg, whose formats have no place for it. What max-size and max-depth left out
// is said on standard error too ("<note-prefix>note: FORMAT: ..."), and in the text formats' last
// lines.
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
