// The pyust babeltrace2 plugin: registration of its component classes, and nothing else. Each
// component class lives in its own folder (stacks/, report/, expand/). Each help string names
// the parameters and the manual page (doc/man) that documents them, as babeltrace2's own do.
#include <babeltrace2/babeltrace.h>

#include "plugin/common/mip.hpp"
#include "plugin/expand/expand.hpp"
#include "plugin/report/report.hpp"
#include "plugin/stacks/stacks.hpp"

// The plugin descriptor macros use C designated initializers, which GCC accepts in C++17 as an
// extension; the loader finds the descriptors through functions it looks up with dlsym, so they
// must stay visible despite -fvisibility=hidden.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC visibility push(default)

BT_PLUGIN_MODULE();

BT_PLUGIN(pyust);
BT_PLUGIN_DESCRIPTION("Python call stacks from pyust's LTTng traces (python:* events)");
BT_PLUGIN_AUTHOR("The pyust developers");
BT_PLUGIN_LICENSE("MIT");

BT_PLUGIN_FILTER_COMPONENT_CLASS(stacks, pyust::plugin::stacks::iterator_next);
BT_PLUGIN_FILTER_COMPONENT_CLASS_DESCRIPTION(
    stacks, "Forward every message; follow each python:* event with a pyust:stack event "
            "carrying its thread's depth and frames");
BT_PLUGIN_FILTER_COMPONENT_CLASS_HELP(
    stacks, "Parameter: raw-names. See the babeltrace2-filter.pyust.stacks(7) manual page.");
BT_PLUGIN_FILTER_COMPONENT_CLASS_INITIALIZE_METHOD(stacks, pyust::plugin::stacks::initialize);
#if PYUST_BT_HAS_MIP1
BT_PLUGIN_FILTER_COMPONENT_CLASS_GET_SUPPORTED_MIP_VERSIONS_METHOD(
    stacks, pyust::plugin::supported_mip_versions<bt_self_component_class_filter>);
#endif
BT_PLUGIN_FILTER_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD(
    stacks, pyust::plugin::stacks::iterator_initialize);
BT_PLUGIN_FILTER_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_FINALIZE_METHOD(
    stacks, pyust::plugin::stacks::iterator_finalize);

BT_PLUGIN_FILTER_COMPONENT_CLASS(expand, pyust::plugin::expand::iterator_next);
BT_PLUGIN_FILTER_COMPONENT_CLASS_DESCRIPTION(
    expand, "Turn the python:batch events of pyust's fast mode back into python:call, "
            "python:return and python:line events, in time order with every other message");
BT_PLUGIN_FILTER_COMPONENT_CLASS_HELP(expand,
                                      "Parameters: max-delay, lookahead, report-discarded. See the "
                                      "babeltrace2-filter.pyust.expand(7) manual page.");
BT_PLUGIN_FILTER_COMPONENT_CLASS_INITIALIZE_METHOD(expand, pyust::plugin::expand::initialize);
#if PYUST_BT_HAS_MIP1
BT_PLUGIN_FILTER_COMPONENT_CLASS_GET_SUPPORTED_MIP_VERSIONS_METHOD(
    expand, pyust::plugin::supported_mip_versions<bt_self_component_class_filter>);
#endif
BT_PLUGIN_FILTER_COMPONENT_CLASS_FINALIZE_METHOD(expand, pyust::plugin::expand::finalize);
BT_PLUGIN_FILTER_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD(
    expand, pyust::plugin::expand::iterator_initialize);
BT_PLUGIN_FILTER_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_FINALIZE_METHOD(
    expand, pyust::plugin::expand::iterator_finalize);

BT_PLUGIN_SINK_COMPONENT_CLASS(report, pyust::plugin::report::consume);
BT_PLUGIN_SINK_COMPONENT_CLASS_DESCRIPTION(
    report, "Rebuild Python call stacks and write a profile, call tree, per-line profile, "
            "folded stacks, Chrome trace JSON, SVG flame graph or asyncio task view");
BT_PLUGIN_SINK_COMPONENT_CLASS_HELP(
    report,
    "Parameters: format, output, pid, tid, begin, end, min-duration, modules, sort, "
    "limit, min-share, tasks, max-size, max-depth, merge-processes, raw-names, "
    "salvage, period, count, rows, note-prefix. See the babeltrace2-sink.pyust.report(7) manual "
    "page.");
BT_PLUGIN_SINK_COMPONENT_CLASS_INITIALIZE_METHOD(report, pyust::plugin::report::initialize);
#if PYUST_BT_HAS_MIP1
BT_PLUGIN_SINK_COMPONENT_CLASS_GET_SUPPORTED_MIP_VERSIONS_METHOD(
    report, pyust::plugin::supported_mip_versions<bt_self_component_class_sink>);
#endif
BT_PLUGIN_SINK_COMPONENT_CLASS_GRAPH_IS_CONFIGURED_METHOD(
    report, pyust::plugin::report::graph_is_configured);
BT_PLUGIN_SINK_COMPONENT_CLASS_FINALIZE_METHOD(report, pyust::plugin::report::finalize);

#pragma GCC visibility pop
#pragma GCC diagnostic pop
