"""Print a CTF trace's events as JSON lines, read with babeltrace2's Python
bindings (bt2). Run by the tests in a subprocess, under a timeout, so that a
damaged trace that makes babeltrace2 spin fails a test instead of hanging it.

Each line: {"name", "ts" (ns from origin), "vpid", "vtid", "procname", "fields"}.
"""

import json
import sys

import bt2


def _plain(value):
    if isinstance(value, bt2._StringFieldConst):
        return str(value)
    if isinstance(value, (bt2._IntegerFieldConst,)):
        return int(value)
    if isinstance(value, bt2._RealFieldConst):
        return float(value)
    return str(value)


def main(path: str) -> int:
    discarded = 0
    for message in bt2.TraceCollectionMessageIterator(path):
        if type(message) is bt2._DiscardedEventsMessageConst:
            discarded += message.count or 0
            continue
        if type(message) is not bt2._EventMessageConst:
            continue
        event = message.event
        common = event.common_context_field
        record = {
            "name": event.name,
            "ts": message.default_clock_snapshot.ns_from_origin,
            "vpid": int(common["vpid"]) if common is not None and "vpid" in common else None,
            "vtid": int(common["vtid"]) if common is not None and "vtid" in common else None,
            "procname": str(common["procname"]) if common is not None and "procname" in common else None,
            "fields": {name: _plain(field) for name, field in event.payload_field.items()},
        }
        sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.write(json.dumps({"discarded": discarded}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
