"""A CTF 1.8 trace of perf's system call and scheduling events, written from
`perf script`'s text, for perf builds without `perf data convert --to-ctf`
(Debian unstable's perf is built without libbabeltrace).

It writes what perf's own conversion writes for raw_syscalls:sys_enter,
raw_syscalls:sys_exit and sched:sched_switch: one stream file per CPU
(perf_stream_N, the CPU in the packet context), event names as perf names them,
and in each payload the fields perf's conversion gives them with the same
names and types: perf_tid and perf_pid, then the tracepoint's own fields (id
and args, id and ret; prev_comm ... next_prio). The fields perf's conversion
adds that `perf script` cannot print (perf_ip, perf_id, perf_period and the
common_* fields) are left out: nothing reads them. The clock is perf's (perf
recorded with -k mono: CLOCK_MONOTONIC), with no offset; kernel.py then
aligns it with LTTng's as it does perf's own conversion.

`perf script` prints the events in time order (perf sorts them): each CPU's
stream is then in order too, which CTF readers require.

Run as `python -m pyust.perf_ctf PERF.DATA DIRECTORY` to convert by hand.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import uuid

SYS_ENTER = "raw_syscalls:sys_enter"
SYS_EXIT = "raw_syscalls:sys_exit"
SCHED_SWITCH = "sched:sched_switch"
# perf script's fields, in the order it prints them: "PID/TID [CPU] SECONDS.NS: EVENT: FIELDS".
SCRIPT_FIELDS = "pid,tid,cpu,time,event,trace"
# A packet is closed once its content reaches this size (perf's conversion uses about as much).
PACKET_BYTES = 1 << 20
CTF_MAGIC = 0xC1FC1FC1

_ENTER_RE = re.compile(rb"NR (-?\d+) \(([0-9a-fA-F, ]*)\)")
_EXIT_RE = re.compile(rb"NR (-?\d+) = (-?\d+)")
# Command names may hold spaces: the fields around them anchor them.
_SWITCH_RE = re.compile(rb"prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) "
                        rb"prev_state=(\S+) ==> next_comm=(.*) next_pid=(-?\d+) "
                        rb"next_prio=(-?\d+)")
# The kernel's task states as sched_switch prints them (include/trace/events/sched.h), back to
# the bits perf's conversion stores: "R+" (preempted) is the state past the last one.
_STATE_BITS = {b"S": 0x1, b"D": 0x2, b"T": 0x4, b"t": 0x8, b"X": 0x10, b"Z": 0x20, b"P": 0x40,
               b"I": 0x80}

_INT = "integer {{ size = {size}; align = 8; signed = {signed}; encoding = none; " \
    "base = {base}; byte_order = le; }}"


def _int(size: int, signed: bool = True, base: str = "decimal") -> str:
    return _INT.format(size=size, signed="true" if signed else "false", base=base)


# The payloads: (CTF declaration, struct format of the fixed part).
_EVENTS = {
    SYS_ENTER: [("perf_tid", _int(32)), ("perf_pid", _int(32)), ("id", _int(64)),
                ("args[6]", _int(64, False, "hexadecimal"))],
    SYS_EXIT: [("perf_tid", _int(32)), ("perf_pid", _int(32)), ("id", _int(64)),
               ("ret", _int(64))],
    SCHED_SWITCH: [("perf_tid", _int(32)), ("perf_pid", _int(32)),
                   ("prev_comm", "string { encoding = UTF8; }"), ("prev_pid", _int(32)),
                   ("prev_prio", _int(32)), ("prev_state", _int(64)),
                   ("next_comm", "string { encoding = UTF8; }"), ("next_pid", _int(32)),
                   ("next_prio", _int(32))],
}
_EVENT_IDS = {name: index for index, name in enumerate(_EVENTS)}


def _metadata(trace_uuid: uuid.UUID) -> str:
    u64 = _int(64, False)
    lines = [
        "/* CTF 1.8 */",
        "",
        "trace {",
        "\tmajor = 1;",
        "\tminor = 8;",
        f'\tuuid = "{trace_uuid}";',
        "\tbyte_order = le;",
        "\tpacket.header := struct {",
        f"\t\t{_int(32, False)} magic;",
        f"\t\t{_int(8, False)} uuid[16];",
        f"\t\t{_int(32, False)} stream_id;",
        "\t} align(8);",
        "};",
        "",
        "env {",
        '\tdomain = "kernel";',
        '\ttracer_name = "perf";',
        '\tconverter = "pyust (perf script)";',
        "};",
        "",
        "clock {",
        "\tname = perf_clock;",
        '\tdescription = "perf clock";',
        "\tfreq = 1000000000;",
        "\tprecision = 10;",
        "\toffset_s = 0;",
        "\toffset = 0;",
        "\tabsolute = FALSE;",
        "};",
        "",
        "stream {",
        "\tid = 0;",
        "\tevent.header := struct {",
        f"\t\t{_int(32, False)} id;",
        f"\t\t{u64[:-2]} map = clock.perf_clock.value; }} timestamp;",
        "\t} align(8);",
        "\tpacket.context := struct {",
        f"\t\t{u64} timestamp_begin;",
        f"\t\t{u64} timestamp_end;",
        f"\t\t{u64} content_size;",
        f"\t\t{u64} packet_size;",
        f"\t\t{u64} events_discarded;",
        f"\t\t{_int(32, False)} cpu_id;",
        "\t} align(8);",
        "};",
        "",
    ]
    for name, fields in _EVENTS.items():
        lines += ["event {", f"\tid = {_EVENT_IDS[name]};", f'\tname = "{name}";',
                  "\tstream_id = 0;", "\tfields := struct {"]
        lines += [f"\t\t{declaration} {field};" for field, declaration in fields]
        lines += ["\t} align(8);", "};", ""]
    return "\n".join(lines)


class _Stream:
    """One CPU's stream file, written packet by packet."""

    _HEADER = struct.Struct("<I16sI")
    _CONTEXT = struct.Struct("<QQQQQI")

    def __init__(self, path: str, trace_uuid: bytes, cpu: int):
        self.file = open(path, "wb")
        self.uuid = trace_uuid
        self.cpu = cpu
        self.events = []
        self.size = 0
        self.begin = self.end = None

    def add(self, ts: int, record: bytes) -> None:
        if self.begin is None:
            self.begin = ts
        self.end = ts
        self.events.append(record)
        self.size += len(record)
        if self.size >= PACKET_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.events:
            return
        bits = (self._HEADER.size + self._CONTEXT.size + self.size) * 8
        self.file.write(self._HEADER.pack(CTF_MAGIC, self.uuid, 0))
        self.file.write(self._CONTEXT.pack(self.begin, self.end, bits, bits, 0, self.cpu))
        self.file.write(b"".join(self.events))
        self.events = []
        self.size = 0
        self.begin = self.end = None

    def close(self) -> None:
        self.flush()
        self.file.close()


class ConversionError(Exception):
    """perf script failed; the message is its last line."""


def convert(perf_data: str, target: str) -> int:
    """Writes the CTF trace of perf_data into the directory target (made or
    emptied): the number of events written. Raises ConversionError."""
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(target):
        if name == "metadata" or name.startswith("perf_stream_"):
            os.unlink(os.path.join(target, name))
    trace_uuid = uuid.uuid4()
    streams = {}
    header = struct.Struct("<IQ")
    enter = struct.Struct("<iiq6Q")
    leave = struct.Struct("<iiqq")
    ints = struct.Struct("<ii")
    prev = struct.Struct("<iiq")
    enter_id, exit_id, switch_id = (_EVENT_IDS[name] for name in _EVENTS)
    count = 0
    command = ["perf", "script", "-i", perf_data, "--ns", "-F", SCRIPT_FIELDS]
    with open(os.path.join(target, "perf-script.log"), "w+b") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=log)
        try:
            for line in process.stdout:
                parts = line.split(None, 4)
                if len(parts) < 4 or not parts[1].startswith(b"["):
                    continue
                try:
                    pid, tid = (int(n) for n in parts[0].split(b"/"))
                    cpu = int(parts[1][1:-1])
                    seconds, _, ns = parts[2].rstrip(b":").partition(b".")
                    ts = int(seconds) * 1_000_000_000 + int(ns.ljust(9, b"0")[:9])
                except ValueError:
                    continue
                event = parts[3].rstrip(b":")
                fields = parts[4] if len(parts) > 4 else b""
                if event == b"raw_syscalls:sys_enter":
                    match = _ENTER_RE.match(fields)
                    if not match:
                        continue
                    args = [int(a, 16) & 0xFFFFFFFFFFFFFFFF for a in match.group(2).split(b",")
                            if a.strip()]
                    args = (args + [0] * 6)[:6]
                    record = header.pack(enter_id, ts) + enter.pack(tid, pid,
                                                                    int(match.group(1)), *args)
                elif event == b"raw_syscalls:sys_exit":
                    match = _EXIT_RE.match(fields)
                    if not match:
                        continue
                    record = header.pack(exit_id, ts) + leave.pack(
                        tid, pid, int(match.group(1)), int(match.group(2)))
                elif event == b"sched:sched_switch":
                    match = _SWITCH_RE.search(fields)
                    if not match:
                        continue
                    state = 0
                    if match.group(4).startswith(b"R+"):
                        state = 0x100
                    else:
                        for letter in match.group(4).split(b"|"):
                            state |= _STATE_BITS.get(letter, 0)
                    record = (header.pack(switch_id, ts) + ints.pack(tid, pid)
                              + match.group(1) + b"\0"
                              + prev.pack(int(match.group(2)), int(match.group(3)), state)
                              + match.group(5) + b"\0"
                              + ints.pack(int(match.group(6)), int(match.group(7))))
                else:
                    continue
                stream = streams.get(cpu)
                if stream is None:
                    stream = streams[cpu] = _Stream(
                        os.path.join(target, f"perf_stream_{cpu}"), trace_uuid.bytes, cpu)
                stream.add(ts, record)
                count += 1
        finally:
            process.stdout.close()
            returncode = process.wait()
            for stream in streams.values():
                stream.close()
        log.seek(0)
        message = log.read().decode(errors="replace").strip().splitlines()
    os.unlink(os.path.join(target, "perf-script.log"))
    if returncode != 0:
        raise ConversionError(message[-1] if message else f"perf script exited {returncode}")
    with open(os.path.join(target, "metadata"), "w") as file:
        file.write(_metadata(trace_uuid))
    return count


def main(argv: list) -> int:
    if len(argv) != 2:
        print("usage: python -m pyust.perf_ctf PERF.DATA DIRECTORY", file=sys.stderr)
        return 2
    try:
        count = convert(argv[0], argv[1])
    except (ConversionError, OSError) as error:
        print(f"pyust: error: cannot convert {argv[0]}: {error}", file=sys.stderr)
        return 1
    print(f"{count} events in {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
