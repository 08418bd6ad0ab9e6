# A babeltrace2 source plugin (Python, bt2) that builds pyust's event model
# (tracepoints/python_tp.h) as synthetic traces: named cases of well-formed and
# imperfect histories, for the golden tests of pyust's plugin.
#
#   babeltrace2 --plugin-path tests/plugin:BUILD/src/plugin \
#       -c source.pyusttest.cases -p 'case="nested"' -c sink.pyust.report
#
# A case is a list of steps, in time order. Times are in microseconds (the
# trace clock counts nanoseconds from 0). Each step runs on a CPU, and each
# CPU is one stream, like LTTng's per-CPU ring buffers.

import bt2

bt2.register_plugin(__name__, "pyusttest")

PID = 100

# name -> (id, module, qualname, file, first line[, co_name]). Ids carry the pid
# in their high 32 bits, as the hook makes them. Without a co_name, the event's
# name field is the qualified name's last part, as the hook records it.
CODES = {
    "main": (PID << 32 | 1, "__main__", "<module>", "app.py", 1),
    "foo": (PID << 32 | 2, "__main__", "foo", "app.py", 3),
    "bar": (PID << 32 | 3, "pkg.mod", "Bar.run", "/src/pkg/mod.py", 10),
    "fact": (PID << 32 | 4, "__main__", "fact", "app.py", 20),
    "gen": (PID << 32 | 5, "__main__", "numbers", "app.py", 30),
    "fail": (PID << 32 | 6, "__main__", "fail", "app.py", 40),
    "worker": (PID << 32 | 7, "threading", "Thread.run", "threading.py", 900),
    # The naming rule's cases (see StackModel's code_label).
    # exec'd without a module (__name__ not a str: "?"), like jinja2's templates.
    "page": (PID << 32 | 10, "?", "root", "templates/page.html", 1),
    "item": (PID << 32 | 11, "?", "root", "templates/item.html", 1),
    # One `def` whose code is renamed per function, like numpy 1.24's dispatch wrappers.
    "concatenate": (PID << 32 | 12, "numpy.core.overrides",
                    "array_function_dispatch.<locals>.decorator.<locals>.public_api",
                    "<__array_function__ internals>", 177, "concatenate"),
    "copyto": (PID << 32 | 13, "numpy.core.overrides",
               "array_function_dispatch.<locals>.decorator.<locals>.public_api",
               "<__array_function__ internals>", 177, "copyto"),
    # compile(source, "", "exec"), like attrs' generated classes: the hook records a
    # placeholder; a trace of an older hook has an empty file.
    "made": (PID << 32 | 14, "?", "made", "<no file name>", 1),
    "old_empty": (PID << 32 | 15, "attr._make", "__init__", "", 1),
    # A lambda: its name is its qualified name's last part, nothing added.
    "lam": (PID << 32 | 16, "__main__", "main.<locals>.<lambda>", "app.py", 50),
}
UNKNOWN_ID = PID << 32 | 0x99


def code(name):
    return ("code", name)


def call(name, tid=PID):
    return ("call", name, tid)


def ret(name, tid=PID, unwind=0):
    return ("return", name, tid, unwind)


def line(name, number, tid=PID):
    return ("line", name, number, tid)


def c_call(name, owner, tid=PID):
    return ("c_call", name, owner, tid)


def c_return(tid=PID, exception=0):
    return ("c_return", tid, exception)


def thread(tid, name):
    return ("thread", tid, name)


def lost(count, end_us):
    """Events discarded by the tracer, from this step's time to end_us."""
    return ("lost", count, end_us)


def registrations(*names):
    return [(0, code(name)) for name in names]


# Each case: a list of (time in us, step) or (time, step, cpu).
CASES = {
    "nested": registrations("main", "foo", "bar")
    + [
        (1, call("main")),
        (2, call("foo")),
        (3, call("bar")),
        (6, ret("bar")),
        (7, ret("foo")),
        (8, call("bar")),
        (9, ret("bar")),
        (12, ret("main")),
    ],
    "recursion": registrations("main", "fact")
    + [
        (1, call("main")),
        (2, call("fact")),
        (3, call("fact")),
        (4, call("fact")),
        (6, ret("fact")),
        (8, ret("fact")),
        (10, ret("fact")),
        (11, ret("main")),
    ],
    # fail raises inside a C call; the exception leaves fail and foo, main
    # catches it.
    "exception": registrations("main", "foo", "fail")
    + [
        (1, call("main")),
        (2, call("foo")),
        (3, call("fail")),
        (4, c_call("int", "builtins")),
        (5, c_return(exception=1)),
        (6, ret("fail", unwind=1)),
        (7, ret("foo", unwind=1)),
        (9, c_call("print", "builtins")),
        (10, c_return()),
        (12, ret("main")),
    ],
    # Every resumption of a generator is a call, every yield a return.
    "generator": registrations("main", "gen", "foo")
    + [
        (1, call("main")),
        (2, call("gen")),
        (3, ret("gen")),
        (4, call("foo")),
        (5, ret("foo")),
        (6, call("gen")),
        (8, ret("gen")),
        (9, call("foo")),
        (10, ret("foo")),
        (11, call("gen")),
        (12, ret("gen")),
        (13, ret("main")),
    ],
    # Two threads of one process take turns on one CPU (one stream).
    "two_threads": registrations("main", "worker", "foo", "bar")
    + [
        (0, thread(PID, "MainThread")),
        (0, thread(PID + 1, "Worker-1")),
        (1, call("main")),
        (2, call("worker", tid=PID + 1)),
        (3, call("foo")),
        (4, call("bar", tid=PID + 1)),
        (5, ret("foo")),
        (6, call("foo", tid=PID + 1)),
        (7, call("bar")),
        (8, ret("foo", tid=PID + 1)),
        (9, ret("bar")),
        (10, ret("bar", tid=PID + 1)),
        (11, ret("worker", tid=PID + 1)),
        (12, ret("main")),
    ],
    # The session started while main and foo were running: their returns come
    # without calls. bar's registration was re-emitted (rundown); foo's and
    # main's ids are known, but nothing named fact's id.
    "mid_call": registrations("bar", "main", "foo")
    + [
        (5, call("bar")),
        (7, ret("bar")),
        (8, ret("foo")),
        (9, ("call_id", UNKNOWN_ID, "fact", PID)),
        (10, ("return_id", UNKNOWN_ID, PID)),
        (12, ret("main")),
        (20, call("foo")),
        (25, ret("foo")),
    ],
    # CPU 1 loses events between 20 and 40 us: bar's return there is gone, so
    # foo's return closes bar too. main never returns before the trace ends.
    "lost_events": registrations("main", "foo", "bar")
    + [
        (0, thread(PID, "MainThread")),
        (1, call("main"), 1),
        (2, call("foo"), 1),
        (10, call("bar"), 1),
        (15, call("bar", tid=PID + 1), 0),
        (18, ret("bar", tid=PID + 1), 0),
        (20, lost(3, 40), 1),
        (45, ret("foo"), 1),
        (50, call("foo"), 1),
        (60, ret("foo"), 1),
    ],
    # Every naming rule in one run: file for module "?", [co_name] for renamed code, the
    # placeholder of an empty file, a name from a call event only (fact), and an id nothing
    # names (a call without a name).
    "names": registrations("main", "page", "item", "concatenate", "copyto", "made",
                           "old_empty", "lam")
    + [
        (1, call("main")),
        (2, call("page")),
        (2, line("page", 3)),
        (3, call("item")),
        (3, line("item", 1)),
        (4, ret("item")),
        (5, ret("page")),
        (6, call("concatenate")),
        (7, ret("concatenate")),
        (8, call("copyto")),
        (9, ret("copyto")),
        (10, call("concatenate")),
        (11, ret("concatenate")),
        (12, call("made")),
        (12, line("made", 2)),
        (13, ret("made")),
        (14, call("old_empty")),
        (14, line("old_empty", 2)),
        (15, ret("old_empty")),
        (16, call("lam")),
        (17, ret("lam")),
        (18, ("call_id", UNKNOWN_ID, "fact", PID)),
        (19, ("return_id", UNKNOWN_ID, PID)),
        (20, ("call_id", UNKNOWN_ID + 1, "", PID)),
        (21, ("return_id", UNKNOWN_ID + 1, PID)),
        (22, ret("main")),
    ],
    "lines": registrations("main", "foo")
    + [
        (1, call("main")),
        (1, line("main", 1)),
        (2, line("main", 2)),
        (3, call("foo")),
        (3, line("foo", 4)),
        (5, line("foo", 5)),
        (6, line("foo", 4)),
        (7, line("foo", 5)),
        (8, ret("foo")),
        (10, line("main", 3)),
        (11, ret("main")),
    ],
}


def build_trace_class(source):
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
        supports_discarded_events=True,
        discarded_events_have_default_clock_snapshots=True,
    )
    # A field class belongs to one place in a trace class: make one per member.
    fields = {
        "id": lambda: tc.create_unsigned_integer_field_class(
            64, preferred_display_base=bt2.IntegerDisplayBase.HEXADECIMAL
        ),
        "u8": lambda: tc.create_unsigned_integer_field_class(8),
        "u32": lambda: tc.create_unsigned_integer_field_class(32),
        "i64": lambda: tc.create_signed_integer_field_class(64),
        "str": tc.create_string_field_class,
    }
    layouts = {
        "code": [("id", "id"), ("module", "str"), ("qualname", "str"), ("file", "str"),
                 ("first_line", "u32"), ("name", "str")],
        "call": [("id", "id"), ("name", "str")],
        "return": [("id", "id"), ("unwind", "u8")],
        "line": [("id", "id"), ("line", "u32")],
        "c_call": [("name", "str"), ("owner", "str")],
        "c_return": [("exception", "u8")],
        "thread": [("tid", "i64"), ("name", "str")],
        "process": [("version", "str"), ("backend", "str"), ("lines", "u8"), ("c_calls", "u8")],
        "task": [("task", "id"), ("parent", "id"), ("name", "str")],
        "task_step": [("task", "id"), ("resumed", "u32"), ("awaited", "u8"), ("awaited_id", "id"),
                      ("thrown", "u8")],
        "task_end": [("task", "id"), ("state", "u8")],
    }
    classes = {}
    for name, layout in layouts.items():
        payload = tc.create_structure_field_class()
        for member, kind in layout:
            payload.append_member(member, fields[kind]())
        classes[name] = sc.create_event_class(name="python:" + name, payload_field_class=payload)
    return tc, sc, classes


def event_values(step):
    """(event class name, vtid, payload values) of a step."""
    kind = step[0]
    if kind == "code":
        ident, module, qualname, file, first_line, *name = CODES[step[1]]
        return "code", PID, {"id": ident, "module": module, "qualname": qualname,
                             "file": file, "first_line": first_line,
                             "name": name[0] if name else qualname.split(".")[-1]}
    if kind == "call":
        return "call", step[2], {"id": CODES[step[1]][0], "name": CODES[step[1]][2]}
    if kind == "call_id":
        return "call", step[3], {"id": step[1], "name": step[2]}
    if kind == "return":
        return "return", step[2], {"id": CODES[step[1]][0], "unwind": step[3]}
    if kind == "return_id":
        return "return", step[2], {"id": step[1], "unwind": 0}
    if kind == "line":
        return "line", step[3], {"id": CODES[step[1]][0], "line": step[2]}
    if kind == "c_call":
        return "c_call", step[3], {"name": step[1], "owner": step[2]}
    if kind == "c_return":
        return "c_return", step[1], {"exception": step[2]}
    if kind == "thread":
        return "thread", PID, {"tid": step[1], "name": step[2]}
    raise ValueError("unknown step kind: " + kind)


class CaseIterator(bt2._UserMessageIterator):
    def __init__(self, config, port):
        case, tc, sc, classes = port.user_data
        trace = tc(environment={"hostname": "testhost", "domain": "ust"})
        steps = [s if len(s) == 3 else (s[0], s[1], 0) for s in CASES[case]]
        cpus = sorted({cpu for _, _, cpu in steps})
        streams = {cpu: trace.create_stream(sc, name="cpu%d" % cpu) for cpu in cpus}
        end_ns = max(t for t, _, _ in steps) * 1000
        self._msgs = [self._create_stream_beginning_message(streams[c], 0) for c in cpus]
        for t, step, cpu in steps:
            ns = t * 1000
            if step[0] == "lost":
                self._msgs.append(self._create_discarded_events_message(
                    streams[cpu], step[1], ns, step[2] * 1000))
                continue
            name, vtid, values = event_values(step)
            msg = self._create_event_message(classes[name], streams[cpu], ns)
            msg.event.common_context_field["vpid"] = PID
            msg.event.common_context_field["vtid"] = vtid
            msg.event.common_context_field["procname"] = "python3"
            for key, value in values.items():
                msg.event.payload_field[key] = value
            self._msgs.append(msg)
        self._msgs += [self._create_stream_end_message(streams[c], end_ns) for c in cpus]
        self._at = 0

    def __next__(self):
        if self._at == len(self._msgs):
            raise StopIteration
        self._at += 1
        return self._msgs[self._at - 1]


@bt2.plugin_component_class
class CasesSource(bt2._UserSourceComponent, name="cases", message_iterator_class=CaseIterator):
    """Builds the synthetic pyust trace named by the `case` parameter."""

    def __init__(self, config, params, obj):
        case = str(params["case"]) if "case" in params else ""
        if case not in CASES:
            raise ValueError("unknown case %r, expected one of %s" % (case, ", ".join(CASES)))
        tc, sc, classes = build_trace_class(self)
        self._add_output_port("out", (case, tc, sc, classes))
