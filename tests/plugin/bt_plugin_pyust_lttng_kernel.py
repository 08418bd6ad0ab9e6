# A babeltrace2 source plugin (Python, bt2) that builds what an LTTng session
# with pyust's --kernel channel writes when lttng-modules is loaded: two traces
# on one clock, a user-space one (python:* events, vpid/vtid/procname contexts)
# and a kernel one (LTTng's syscall_entry_NAME/syscall_exit_NAME and
# sched_switch, with the contexts `lttng add-context -k` gives). This machine
# cannot load lttng-modules; test_lttng_kernel.py feeds this to pyust's report
# sink instead.
#
#   babeltrace2 --plugin-path tests/plugin:BUILD/src/plugin \
#       -c source.pyustkernel.session -p 'context="pid"' -c sink.pyust.report
#
# Parameters: context = "vpid" (default: vpid/vtid, as pyust adds them) or
# "pid" (pid/tid, older add-context habits); syscall = "syscall" (default) or
# "compat_syscall" (a 32-bit program on a 64-bit kernel); lost_exit = true (a
# system call whose exit is missing, LOST_EXIT). Each trace is one
# output port, like the two trace directories of a session: the CLI's muxer
# merges them.

import os
import sys

import bt2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bt_plugin_pyust_test import CaseIterator, build_trace_class  # noqa: E402  (python:* layouts)

bt2.register_plugin(__name__, "pyustkernel")

PID = 4242
TID = 4243  # a thread of PID other than the main one: pid and tid must not be mixed up
SWAPPER = 0

# name -> (id, qualname); module __main__, file app.py.
CODES = {"main": (PID << 32 | 1, "<module>"), "foo": (PID << 32 | 2, "foo"),
         "bar": (PID << 32 | 3, "bar")}

# The history, in ns: foo calls bar; bar writes 6 bytes to fd 1 (700 ns), then
# blocks: the thread is switched out at 5000 and back in at 8500 (3500 ns off
# the CPU, swapper ran meanwhile), and bar returns at 9000. Another process
# (PID 77) writes on CPU 1 at the same time: none of it may land on our stacks.
USER = [
    (1000, "call", "main"),
    (2000, "call", "foo"),
    (3000, "call", "bar"),
    (9000, "return", "bar"),
    (10000, "return", "foo"),
    (11000, "return", "main"),
]
# (ns, cpu, event, (vpid, vtid, procname), payload)
ME = (PID, TID, "python3")
IDLE = (SWAPPER, SWAPPER, "swapper/0")
OTHER = (77, 77, "logger")
KERNEL = [
    (3500, 1, "syscall_entry_write", OTHER, {"fd": 2, "buf": 0x5000, "count": 100}),
    (4000, 0, "syscall_entry_write", ME, {"fd": 1, "buf": 0x7F0000001000, "count": 6}),
    (4700, 0, "syscall_exit_write", ME, {"ret": 6}),
    (5000, 0, "sched_switch", ME, {"prev_comm": "python3", "prev_tid": TID, "prev_prio": 20,
                                   "prev_state": 1, "next_comm": "swapper/0",
                                   "next_tid": SWAPPER, "next_prio": 20}),
    (7000, 1, "syscall_exit_write", OTHER, {"ret": 100}),
    (8500, 0, "sched_switch", IDLE, {"prev_comm": "swapper/0", "prev_tid": SWAPPER,
                                     "prev_prio": 20, "prev_state": 0, "next_comm": "python3",
                                     "next_tid": TID, "next_prio": 20}),
]
# lost_exit=true: a system call of ours before foo's call whose exit the tracer lost (its buffer
# full): foo's call, an event of user space, ends it.
LOST_EXIT = [(1500, 0, "syscall_entry_write", ME, {"fd": 1, "buf": 0x7F0000002000, "count": 1})]
END_NS = 12000


def kernel_trace_class(source, clock, context, syscall):
    """LTTng's kernel channel: common context (vpid|pid, vtid|tid, procname) as
    `lttng add-context -k` adds it; payloads as lttng-modules defines them."""
    tc = source._create_trace_class()
    common = tc.create_structure_field_class()
    common.append_member("pid" if context == "pid" else "vpid",
                         tc.create_signed_integer_field_class(32))
    common.append_member("tid" if context == "pid" else "vtid",
                         tc.create_signed_integer_field_class(32))
    common.append_member("procname", tc.create_string_field_class())
    sc = tc.create_stream_class(name="pyust-kernel", default_clock_class=clock,
                                event_common_context_field_class=common)
    kinds = {
        "s32": lambda: tc.create_signed_integer_field_class(32),
        "s64": lambda: tc.create_signed_integer_field_class(64),
        "u32": lambda: tc.create_unsigned_integer_field_class(32),
        "hex": lambda: tc.create_unsigned_integer_field_class(
            64, preferred_display_base=bt2.IntegerDisplayBase.HEXADECIMAL),
        "u64": lambda: tc.create_unsigned_integer_field_class(64),
        "str": tc.create_string_field_class,
    }
    layouts = {
        syscall + "_entry_write": [("fd", "u32"), ("buf", "hex"), ("count", "u64")],
        syscall + "_exit_write": [("ret", "s64")],
        "sched_switch": [("prev_comm", "str"), ("prev_tid", "s32"), ("prev_prio", "s32"),
                         ("prev_state", "s64"), ("next_comm", "str"), ("next_tid", "s32"),
                         ("next_prio", "s32")],
    }
    classes = {}
    for name, layout in layouts.items():
        payload = tc.create_structure_field_class()
        for member, kind in layout:
            payload.append_member(member, kinds[kind]())
        # By their LTTng name, syscall_ standing for the prefix of the parameter.
        classes[name.replace(syscall + "_", "syscall_", 1)] = sc.create_event_class(
            name=name, payload_field_class=payload)
    return tc, sc, classes


class SessionIterator(CaseIterator):
    def __init__(self, config, port):
        domain, tc, sc, classes, keys, lost_exit = port.user_data
        trace = tc(environment={"hostname": "testhost", "domain": domain,
                                "tracer_name": "lttng-modules" if domain == "kernel"
                                else "lttng-ust"})
        streams = {cpu: trace.create_stream(sc, name="cpu%d" % cpu) for cpu in (0, 1)}
        events = []  # (ns, cpu, class, (pid, tid, procname), payload)
        if domain == "ust":
            events += [(0, 0, classes["code"], ME,
                        {"id": ident, "module": "__main__", "qualname": qualname,
                         "file": "app.py", "first_line": 1})
                       for ident, qualname in CODES.values()]
            events += [(ns, 0, classes[kind], ME,
                        {"id": CODES[name][0], "name": CODES[name][1]} if kind == "call"
                        else {"id": CODES[name][0], "unwind": 0})
                       for ns, kind, name in USER]
        else:
            events += [(ns, cpu, classes[name], who, payload)
                       for ns, cpu, name, who, payload in sorted(
                           KERNEL + (LOST_EXIT if lost_exit else []), key=lambda e: e[0])]
        self._msgs = [self._create_stream_beginning_message(s, 0) for s in streams.values()]
        for ns, cpu, event_class, (pid, tid, procname), payload in events:
            msg = self._create_event_message(event_class, streams[cpu], ns)
            context = msg.event.common_context_field
            context[keys[0]], context[keys[1]], context["procname"] = pid, tid, procname
            for key, value in payload.items():
                msg.event.payload_field[key] = value
            self._msgs.append(msg)
        self._msgs += [self._create_stream_end_message(s, END_NS) for s in streams.values()]
        self._at = 0  # CaseIterator.__next__ hands out self._msgs


@bt2.plugin_component_class
class SessionSource(bt2._UserSourceComponent, name="session",
                    message_iterator_class=SessionIterator):
    """The two traces of a synthetic LTTng session with a kernel channel."""

    def __init__(self, config, params, obj):
        context = str(params["context"]) if "context" in params else "vpid"
        syscall = str(params["syscall"]) if "syscall" in params else "syscall"
        lost_exit = bool(params["lost_exit"]) if "lost_exit" in params else False
        if context not in ("vpid", "pid") or syscall not in ("syscall", "compat_syscall"):
            raise ValueError("bad parameters: context=%s (vpid|pid), syscall=%s "
                             "(syscall|compat_syscall)" % (context, syscall))
        ust_tc, ust_sc, ust_classes = build_trace_class(self)
        clock = ust_sc.default_clock_class  # one clock for both, as in one LTTng session
        kernel_tc, kernel_sc, kernel_classes = kernel_trace_class(self, clock, context, syscall)
        keys = ("pid", "tid") if context == "pid" else ("vpid", "vtid")
        self._add_output_port("ust", ("ust", ust_tc, ust_sc, ust_classes, ("vpid", "vtid"),
                                      lost_exit))
        self._add_output_port("kernel", ("kernel", kernel_tc, kernel_sc, kernel_classes, keys,
                                         lost_exit))
