# A babeltrace2 source plugin (Python, bt2) for the tests of filter.pyust.expand: synthetic
# LTTng-like traces of one program history, recorded either in standard mode (one python:call,
# python:return or python:line event per record) or in fast mode (python:batch events holding
# the records, encoded here as tracepoints/python_tp.h describes, and python:horizon events).
# Expanding the fast trace must give the standard one.
#
#   babeltrace2 --plugin-path tests/plugin:BUILD/src/plugin \
#       -c source.pyustfast.cases -p 'case="two_threads",mode="fast"' -c filter.pyust.expand
#
# Times are in ns from 0. Streams are per CPU, with packets, like LTTng's ring buffers.

import bt2

bt2.register_plugin(__name__, "pyustfast")

PID = 100
WORKER = 101
CODES = {
    "main": (PID << 32 | 1, "__main__", "<module>", "app.py", 1),
    "foo": (PID << 32 | 2, "__main__", "foo", "app.py", 3),
    "bar": (PID << 32 | 3, "pkg.mod", "Bar.run", "/src/pkg/mod.py", 10),
    "worker": (PID << 32 | 4, "threading", "Thread.run", "threading.py", 900),
    # Registered by the parent before a fork: its id's high half is not the pid (a far id).
    "inherited": (99 << 32 | 5, "__main__", "inherited", "app.py", 50),
}
KINDS = {"call": 0, "return": 1, "unwind": 2, "line": 3}


def tsc_of(ns):
    """The record clock of the synthetic hook: 3 ticks per ns, from an arbitrary origin."""
    return 3 * ns + 7


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode(records, id_high, begin_tsc):
    """The bytes of python:batch's `records` for [(ns, kind, code name, line), ...]."""
    out = bytearray()
    previous = begin_tsc
    for ns, kind, name, line in records:
        ident = CODES[name][0]
        tsc = tsc_of(ns)
        near = ident >> 32 == id_high
        out += varint((tsc - previous) << 3 | KINDS[kind] | (0 if near else 4))
        out += varint(ident & 0xFFFFFFFF if near else ident)
        if kind == "line":
            out += varint(line)
        previous = tsc
    return bytes(out)


# The program's history: (ns, tid, kind, code name, line). Thread 100 runs on CPU 0, thread 101
# on CPU 1. No two records of different threads share a time (their order would be arbitrary).
HISTORY = [
    (1000, PID, "call", "main", 0),
    (1000, PID, "line", "main", 1),
    (2000, WORKER, "call", "worker", 0),
    (3000, PID, "call", "foo", 0),
    (4000, PID, "line", "foo", 4),
    (5000, WORKER, "call", "foo", 0),
    (5000, WORKER, "line", "foo", 5),
    (6000, PID, "return", "foo", 0),
    (7000, WORKER, "return", "foo", 0),
    (8000, PID, "call", "bar", 0),
    (9000, PID, "unwind", "bar", 0),
    (10000, PID, "line", "main", 2),
    (10500, PID, "call", "inherited", 0),
    (10600, PID, "return", "inherited", 0),
    (11000, WORKER, "call", "bar", 0),
    (12000, WORKER, "return", "bar", 0),
    (13000, WORKER, "return", "worker", 0),
    (14000, PID, "return", "main", 0),
]

# Fast mode: (write time, stream, writing thread's vtid, tid of the records, first index, the
# history's records of that thread in [from, to] ns). Batch C is written on CPU 0 by thread 100
# for thread 101: the records' vtid comes from the payload.
BATCHES = [
    (6500, 0, PID, PID, 0, 1000, 6000),
    (7300, 0, PID, WORKER, 0, 2000, 7000),
    (13500, 1, WORKER, WORKER, 4, 11000, 13000),
    (14500, 0, PID, PID, 5, 8000, 14000),
]
HORIZONS = [(500, 0), (7800, 0), (15000, 0), (16000, 1)]  # (ns, final)
TICKS = [(4500, 1), (9500, 0)]  # unrelated events: (ns, stream)
PACKETS = {0: [(0, 7000), (7200, 20000)], 1: [(0, 20000)]}
END = 20000

# Cases: changes to the fast recording of the same history.
CASES = {
    "two_threads": {},
    # Thread 100's batches hold records 0-4, then 7-...: records 5 and 6 were lost.
    "gap": {"first": {3: 7}},
    # Batch C's records are cut short: its varints end early, its count is wrong.
    "malformed": {"truncate": {1: 3}},
    # The process's horizons stop after the first one, and the delay allowed is short: later
    # batches hold nothing back and their records come too late to be put in order.
    "stale": {"horizons": [(500, 0)]},
    # The stream class declares python:batch but not python:call.
    "no_call": {"no_call": True},
    # The process's first horizon is after its first batches (a snapshot or a flight recorder
    # overwrote the earlier ones): only the look-ahead keeps those batches in order.
    "late_horizon": {"horizons": [(7800, 0), (15000, 0), (16000, 1)]},
    # Thread 100 renames itself (prctl PR_SET_NAME) at 7500 ns: its events from then on carry
    # the new procname, in the standard recording and in the batch it writes later (D).
    "renamed": {"rename": (7500, PID, "renamed")},
    # The source fails (a damaged trace) when it reaches 14600 ns: after the last batch, before
    # the horizons that would release it.
    "fails": {"fail_at": 14600},
    # Fast mode only: LTTng opens a packet when the first event after a flush is written (a
    # live session's timer, a switch timer), so both streams have no packet from 7850 until
    # an event comes (CPU 0's tick at 9500, CPU 1's batch at 13500): thread 100's records at
    # 8000 and 9000 fall where no packet is open, in the batch written at 14500.
    "lazy_packets": {"packets": {0: [(0, 7850), (9500, 20000)], 1: [(0, 7850), (13500, 20000)]}},
    # Fast mode only: no python:code event (a reader that joined late): expand can name no call.
    "no_codes": {"no_codes": True},
}


def build_trace_class(source, with_call=True):
    tc = source._create_trace_class()
    common = tc.create_structure_field_class()
    common.append_member("vpid", tc.create_signed_integer_field_class(32))
    common.append_member("vtid", tc.create_signed_integer_field_class(32))
    common.append_member("procname", tc.create_string_field_class())
    clock = source._create_clock_class(
        name="monotonic", frequency=1000000000, offset=bt2.ClockClassOffset(0)
    )
    sc = tc.create_stream_class(
        name="channel0",
        default_clock_class=clock,
        event_common_context_field_class=common,
        supports_packets=True,
        packets_have_beginning_default_clock_snapshot=True,
        packets_have_end_default_clock_snapshot=True,
        supports_discarded_events=True,
        discarded_events_have_default_clock_snapshots=True,
    )

    def u(bits, hexa=False):
        base = bt2.IntegerDisplayBase.HEXADECIMAL if hexa else bt2.IntegerDisplayBase.DECIMAL
        return tc.create_unsigned_integer_field_class(bits, preferred_display_base=base)

    def s(bits):
        return tc.create_signed_integer_field_class(bits)

    string = tc.create_string_field_class
    byte_length = u(32)
    # The records' length is the payload's _records_length member, as LTTng's metadata says:
    # a length field class under MIP 0, a field location under MIP 1.
    if getattr(tc, "graph_mip_version", 0) >= 1:
        where = tc.create_field_location(bt2.FieldLocationScope.EVENT_PAYLOAD, ["_records_length"])
        records = tc.create_dynamic_array_field_class(u(8, True), length_field_location=where)
    else:
        records = tc.create_dynamic_array_field_class(u(8, True), length_fc=byte_length)
    layouts = {
        "code": [("id", u(64, True)), ("module", string()), ("qualname", string()),
                 ("file", string()), ("first_line", u(32))],
        "call": [("id", u(64, True)), ("name", string())],
        "return": [("id", u(64, True)), ("unwind", u(8))],
        "line": [("id", u(64, True)), ("line", u(32))],
        "batch": [("pid", s(32)), ("tid", s(32)), ("first", u(64)), ("count", u(32)),
                  ("id_high", u(32, True)), ("begin_tsc", u(64)), ("begin_ns", u(64)),
                  ("end_tsc", u(64)), ("end_ns", u(64)), ("_records_length", byte_length),
                  ("records", records)],
        "horizon": [("pid", s(32)), ("final", u(8))],
    }
    classes = {}
    for name, layout in layouts.items():
        if name == "call" and not with_call:
            continue
        payload = tc.create_structure_field_class()
        for member, field_class in layout:
            payload.append_member(member, field_class)
        classes[name] = sc.create_event_class(name="python:" + name, payload_field_class=payload)
    tick = tc.create_structure_field_class()
    tick.append_member("value", u(32))
    classes["tick"] = sc.create_event_class(name="other:tick", payload_field_class=tick)
    return tc, sc, classes


def batch_values(batch, changes, index):
    time, _, _, tid, first, begin, end = batch
    records = [(ns, kind, name, line) for ns, t, kind, name, line in HISTORY
               if t == tid and begin <= ns <= end]
    begin_ns = records[0][0] - 200
    data = encode(records, PID, tsc_of(begin_ns))
    cut = changes.get("truncate", {}).get(index)
    if cut is not None:
        data = data[:cut]
    return {
        "pid": PID, "tid": tid, "first": changes.get("first", {}).get(index, first),
        "count": len(records), "id_high": PID, "begin_tsc": tsc_of(begin_ns),
        "begin_ns": begin_ns, "end_tsc": tsc_of(time), "end_ns": time,
        "records": list(data),
    }


def steps_of(case, mode):
    """[(ns, step)] in time order (stable for equal times)."""
    changes = CASES[case]
    steps = [] if changes.get("no_codes") else [(0, ("code", name)) for name in CODES]
    steps += [(ns, ("tick", cpu, ns)) for ns, cpu in TICKS]
    if mode == "standard":
        steps += [(ns, ("record", tid, kind, name, line)) for ns, tid, kind, name, line in HISTORY]
    else:
        steps += [(ns, ("horizon", final)) for ns, final in changes.get("horizons", HORIZONS)]
        steps += [(b[0], ("batch", b[1], b[2], batch_values(b, changes, i)))
                  for i, b in enumerate(BATCHES)]
    packets_of = changes.get("packets", PACKETS) if mode == "fast" else PACKETS
    for cpu, packets in packets_of.items():
        for begin, end in packets:
            steps += [(begin, ("packet_begin", cpu)), (end, ("packet_end", cpu))]
    order = {"packet_end": 0, "packet_begin": 1}
    return sorted(steps, key=lambda s: (s[0], order.get(s[1][0], 2)))


class CaseIterator(bt2._UserMessageIterator):
    def __init__(self, config, port):
        case, mode, tc, sc, classes = port.user_data
        rename = CASES[case].get("rename")
        trace = tc(environment={"hostname": "testhost", "domain": "ust"})
        streams = {cpu: trace.create_stream(sc, name="cpu%d" % cpu) for cpu in PACKETS}
        packets = {}
        self._msgs = [self._create_stream_beginning_message(streams[c]) for c in streams]

        def event(name, cpu, ns, vtid, values):
            msg = self._create_event_message(classes[name], packets[cpu], ns)
            msg.event.common_context_field["vpid"] = PID
            msg.event.common_context_field["vtid"] = vtid
            renamed = rename and vtid == rename[1] and ns >= rename[0]
            msg.event.common_context_field["procname"] = rename[2] if renamed else "python3"
            for key, value in values.items():
                msg.event.payload_field[key] = value
            self._msgs.append(msg)

        self._fail_at = None
        for ns, step in steps_of(case, mode):
            if self._fail_at is None and ns >= CASES[case].get("fail_at", END + 1):
                self._fail_at = len(self._msgs)
            kind = step[0]
            if kind == "packet_begin":
                packets[step[1]] = streams[step[1]].create_packet()
                self._msgs.append(self._create_packet_beginning_message(packets[step[1]], ns))
            elif kind == "packet_end":
                self._msgs.append(self._create_packet_end_message(packets.pop(step[1]), ns))
            elif kind == "code":
                ident, module, qualname, file, first_line = CODES[step[1]]
                event("code", 0, ns, PID, {"id": ident, "module": module, "qualname": qualname,
                                           "file": file, "first_line": first_line})
            elif kind == "tick":
                event("tick", step[1], ns, PID, {"value": step[2]})
            elif kind == "record":
                _, tid, record, name, line = step
                ident = CODES[name][0]
                cpu = 0 if tid == PID else 1
                if record == "call":
                    event("call", cpu, ns, tid, {"id": ident, "name": CODES[name][2]})
                elif record == "line":
                    event("line", cpu, ns, tid, {"id": ident, "line": line})
                else:
                    event("return", cpu, ns, tid, {"id": ident,
                                                   "unwind": int(record == "unwind")})
            elif kind == "horizon":
                event("horizon", 0, ns, PID, {"pid": PID, "final": step[1]})
            elif kind == "batch":
                event("batch", step[1], ns, step[2], step[3])
        self._msgs += [self._create_stream_end_message(streams[c]) for c in streams]
        self._at = 0

    def __next__(self):
        if self._at == self._fail_at:
            raise RuntimeError("damaged packet (case fails)")
        if self._at == len(self._msgs):
            raise StopIteration
        self._at += 1
        return self._msgs[self._at - 1]


@bt2.plugin_component_class
class CasesSource(bt2._UserSourceComponent, name="cases", message_iterator_class=CaseIterator):
    """The history of CASES[case] recorded in standard or fast mode (parameter mode)."""

    @classmethod
    def _user_get_supported_mip_versions(cls, params, obj, log_level):
        # Where babeltrace2 speaks MIP 1 (2.1), the cases meet its components that speak only
        # MIP 1, such as sink.ctf.fs writing CTF 2; the trace class made here is the same under
        # both (no clock UUID).
        return list(range(bt2.get_maximal_mip_version() + 1))

    def __init__(self, config, params, obj):
        case = str(params["case"]) if "case" in params else ""
        mode = str(params["mode"]) if "mode" in params else "fast"
        if case not in CASES or mode not in ("standard", "fast"):
            raise ValueError("unknown case %r or mode %r: cases %s, modes standard, fast"
                             % (case, mode, ", ".join(CASES)))
        tc, sc, classes = build_trace_class(self, with_call=not CASES[case].get("no_call"))
        self._add_output_port("out", (case, mode, tc, sc, classes))
