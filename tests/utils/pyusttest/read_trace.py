"""Print a CTF trace's events as JSON lines, read with babeltrace2's Python
bindings (bt2). Run by pyusttest.traces in a subprocess, under a timeout, so that a
damaged trace that makes babeltrace2 spin fails a test instead of hanging it.

    read_trace.py TRACE [--expand PLUGIN_DIR] [--count]

With --expand, the trace goes through pyust's filter.pyust.expand (from the
plugin in PLUGIN_DIR, or babeltrace2's system plugin directory when it is
empty), which turns fast-mode python:batch events back into python:call,
python:return and python:line events: what every reader of a fast-mode trace
sees.

With --count, one line only: {"counts": {event name: events}, "discarded": ...}.

Each line: {"name", "ts" (ns from origin), "vpid", "vtid", "procname", "fields"} (an array
field as its length);
the last line: {"discarded": events LTTng (or the expansion) reported lost}.
"""

import json
import os
import sys

import bt2


def _plain(value):
    # Arrays (a python:batch's records) as their length: no test reads their bytes, and
    # reading them one field at a time took most of a loss test's minute.
    if isinstance(value, bt2._ArrayFieldConst):
        return len(value)
    if isinstance(value, bt2._StringFieldConst):
        return str(value)
    if isinstance(value, (bt2._IntegerFieldConst,)):
        return int(value)
    if isinstance(value, bt2._RealFieldConst):
        return float(value)
    return str(value)


class _Printer:
    def __init__(self):
        self.discarded = 0

    def __call__(self, message):
        if type(message) is bt2._DiscardedEventsMessageConst:
            self.discarded += message.count or 0
            return
        if type(message) is not bt2._EventMessageConst:
            return
        event = message.event
        common = event.common_context_field

        def context(name, kind):
            return kind(common[name]) if common is not None and name in common else None

        record = {
            "name": event.name,
            "ts": message.default_clock_snapshot.ns_from_origin,
            "vpid": context("vpid", int),
            "vtid": context("vtid", int),
            "procname": context("procname", str),
            "fields": {name: _plain(field) for name, field in event.payload_field.items()},
        }
        sys.stdout.write(json.dumps(record) + "\n")


class _Counter:
    def __init__(self):
        self.counts = {}
        self.discarded = 0

    def __call__(self, message):
        if type(message) is bt2._DiscardedEventsMessageConst:
            self.discarded += message.count or 0
        elif type(message) is bt2._EventMessageConst:
            name = message.event.name
            self.counts[name] = self.counts.get(name, 0) + 1


class _Sink(bt2._UserSinkComponent):
    """Hands every message of its one input to the callable it is given."""

    def __init__(self, config, params, handle):
        self._handle = handle
        self._port = self._add_input_port("in")
        self._iterator = None

    def _user_graph_is_configured(self):
        self._iterator = self._create_message_iterator(self._port)

    def _user_consume(self):
        self._handle(next(self._iterator))


def _expanded(path: str, plugin_dir: str, handle) -> None:
    """src.ctf.fs -> flt.utils.muxer -> filter.pyust.expand -> handle."""
    if plugin_dir:
        plugins = [p for p in bt2.find_plugins_in_path(plugin_dir) if p.name == "pyust"]
        plugin = plugins[0] if plugins else None
    else:
        plugin = bt2.find_plugin("pyust")
    if plugin is None or "expand" not in plugin.filter_component_classes:
        raise SystemExit(f"no filter.pyust.expand in {plugin_dir or 'the system plugin path'}")
    graph = bt2.Graph()
    muxer = graph.add_component(bt2.find_plugin("utils").filter_component_classes["muxer"],
                                "muxer")
    # WARNING, as the babeltrace2 CLI runs it: the filter's lines about missing records
    # (bt2's default level, NONE, would silence them) go to standard error.
    expand = graph.add_component(plugin.filter_component_classes["expand"], "expand",
                                 logging_level=bt2.LoggingLevel.WARNING)
    sink = graph.add_component(_Sink, "sink", obj=handle)
    # One source per CTF trace under path (a session's output holds one per
    # buffering scheme and user).
    traces = sorted(root for root, _, files in os.walk(path) if "metadata" in files)
    ports = 0
    for number, trace in enumerate(traces):
        source = graph.add_component(bt2.find_plugin("ctf").source_component_classes["fs"],
                                     f"source{number}", params={"inputs": [trace]})
        for port in source.output_ports.values():
            graph.connect_ports(port, muxer.input_ports[f"in{ports}"])
            ports += 1
    graph.connect_ports(muxer.output_ports["out"], expand.input_ports["in"])
    graph.connect_ports(expand.output_ports["out"], sink.input_ports["in"])
    graph.run()


def main(argv: list) -> int:
    is_count = "--count" in argv
    argv = [arg for arg in argv if arg != "--count"]
    handle = _Counter() if is_count else _Printer()
    if len(argv) == 3 and argv[1] == "--expand":
        _expanded(argv[0], argv[2], handle)
    elif len(argv) == 1:
        for message in bt2.TraceCollectionMessageIterator(argv[0]):
            handle(message)
    else:
        raise SystemExit(__doc__)
    last = {"counts": handle.counts} if is_count else {}
    last["discarded"] = handle.discarded
    sys.stdout.write(json.dumps(last) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
