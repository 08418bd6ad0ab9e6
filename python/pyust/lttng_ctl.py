"""liblttng-ctl through ctypes: what pyust asks of the session daemon without starting an
`lttng` process (each costs about 5 ms on a quiet machine, and a run asked for six).

Every function here answers False (or None) when the library or the function it needs is
missing, and the caller (pyust.lttng) runs the `lttng` command instead; a request LTTng
refused raises LttngError with LTTng's own words. The structures read and written are part
of LTTng's ABI, unchanged from 2.13 to 2.16: where the library allocates one
(lttng_channel_create, lttng_event_create), pyust writes only fields at fixed offsets.
"""

from __future__ import annotations


class LttngError(Exception):
    """LTTng refused or failed; the message says what to do."""


# lttng/domain.h, lttng/event.h, lttng/lttng-error.h, lttng/session-descriptor.h and
# lttng/tracker.h's values.
DOMAIN_UST = 2
BUFFER_PER_UID = 1
_LTTNG_OK = 10
ERR_INVALID = 97
_EVENT_NAME_OFFSET = 4  # struct lttng_event: type (int), then name[256]
_EVENT_LOGLEVEL_OFFSET = 264  # after loglevel_type (int) at 260
_SYMBOL_NAME_LEN = 256
_EVENT_CONTEXT_SIZE = 312  # struct lttng_event_context: type (int), padding, a 288-byte union
CONTEXT_TYPES = {"vpid": 5, "vtid": 7}  # enum lttng_event_context_type
TRACE_FORMAT_CODES = {"ctf-1.8": 1, "ctf-2": 2}  # enum lttng_trace_format
_PROCESS_ATTR_VIRTUAL_USER_ID = 3
_TRACKING_POLICY_INCLUDE_SET = 2

# The functions of one session name that pyust calls directly.
SESSION_FUNCTIONS = ("lttng_start_tracing", "lttng_stop_tracing_no_wait",
                     "lttng_destroy_session_no_wait")
# The functions that enable a channel as `lttng enable-channel` does.
_CHANNEL_FUNCTIONS = ("lttng_create_handle", "lttng_destroy_handle", "lttng_channel_create",
                      "lttng_channel_destroy", "lttng_enable_channel")
# The functions that create a session and set up its events as `lttng create`,
# `enable-event`, `add-context` and `track --vuid` do (LTTng 2.12 and later).
_SESSION_SETUP_FUNCTIONS = _CHANNEL_FUNCTIONS + (
    "lttng_session_descriptor_local_create", "lttng_session_descriptor_destroy",
    "lttng_create_session_ext", "lttng_event_create", "lttng_event_destroy",
    "lttng_enable_event", "lttng_add_context", "lttng_session_get_tracker_handle",
    "lttng_process_attr_tracker_handle_set_tracking_policy",
    "lttng_process_attr_virtual_user_id_tracker_handle_add_uid",
    "lttng_process_attr_tracker_handle_destroy")

_LIBRARY = []
_TYPES = []


def library():
    """liblttng-ctl, its functions' signatures declared, or None when it cannot be loaded."""
    if not _LIBRARY:
        try:
            _LIBRARY.append(_load())
        except (OSError, AttributeError):
            _LIBRARY.append(None)
    return _LIBRARY[0]


def _load():
    import ctypes

    c_char_p, c_int, c_void_p = ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p
    lib = ctypes.CDLL("liblttng-ctl.so.0")

    def declare(name, argtypes, restype):
        if hasattr(lib, name):
            function = getattr(lib, name)
            function.argtypes = argtypes
            function.restype = restype

    declare("lttng_data_pending", [c_char_p], c_int)
    declare("lttng_session_daemon_alive", [], c_int)
    declare("lttng_strerror", [c_int], c_char_p)
    for name in SESSION_FUNCTIONS:
        declare(name, [c_char_p], c_int)
    # Ask the library for what it has, not for its version: a function missing
    # (an LTTng before 2.12 has no process attribute trackers) means the `lttng` command.
    if all(hasattr(lib, name) for name in _CHANNEL_FUNCTIONS):
        domain, channel = channel_types()
        declare("lttng_create_handle", [c_char_p, ctypes.POINTER(domain)], c_void_p)
        declare("lttng_destroy_handle", [c_void_p], None)
        declare("lttng_channel_create", [ctypes.POINTER(domain)], ctypes.POINTER(channel))
        declare("lttng_channel_destroy", [ctypes.POINTER(channel)], None)
        declare("lttng_enable_channel", [c_void_p, ctypes.POINTER(channel)], c_int)
    declare("lttng_session_descriptor_local_create", [c_char_p, c_char_p], c_void_p)
    declare("lttng_session_descriptor_set_trace_format", [c_void_p, c_int], c_int)
    declare("lttng_session_descriptor_destroy", [c_void_p], None)
    declare("lttng_create_session_ext", [c_void_p], c_int)
    declare("lttng_event_create", [], c_void_p)
    declare("lttng_event_destroy", [c_void_p], None)
    declare("lttng_enable_event", [c_void_p, c_void_p, c_char_p], c_int)
    declare("lttng_add_context", [c_void_p, c_void_p, c_char_p, c_char_p], c_int)
    declare("lttng_session_get_tracker_handle",
            [c_char_p, c_int, c_int, ctypes.POINTER(c_void_p)], c_int)
    declare("lttng_process_attr_tracker_handle_set_tracking_policy", [c_void_p, c_int], c_int)
    declare("lttng_process_attr_virtual_user_id_tracker_handle_add_uid",
            [c_void_p, ctypes.c_uint], c_int)
    declare("lttng_process_attr_tracker_handle_destroy", [c_void_p], None)
    return lib


def channel_types():
    """ctypes' struct lttng_domain and struct lttng_channel of lttng/domain.h and
    lttng/channel.h. Their layout is part of LTTng's ABI, the same from 2.13 to 2.16 (each
    field and padding array; plain C alignment: these public structures are not
    LTTNG_PACKED, only the daemon's wire formats are), so ctypes' default alignment
    matches the compiler's: 308 and 624 bytes on x86-64."""
    if not _TYPES:
        import ctypes

        class DomainAttr(ctypes.Union):
            _fields_ = [("pid", ctypes.c_int), ("exec_name", ctypes.c_char * 255),
                        ("padding", ctypes.c_char * (_SYMBOL_NAME_LEN + 32))]

        class Domain(ctypes.Structure):
            _fields_ = [("type", ctypes.c_int), ("buf_type", ctypes.c_int),
                        ("padding", ctypes.c_char * 12), ("attr", DomainAttr)]

        class Extended(ctypes.Union):
            _fields_ = [("padding", ctypes.c_uint64), ("ptr", ctypes.c_void_p)]

        class ChannelAttr(ctypes.Structure):
            _fields_ = [("overwrite", ctypes.c_int), ("subbuf_size", ctypes.c_uint64),
                        ("num_subbuf", ctypes.c_uint64),
                        ("switch_timer_interval", ctypes.c_uint),
                        ("read_timer_interval", ctypes.c_uint), ("output", ctypes.c_int),
                        ("tracefile_size", ctypes.c_uint64),
                        ("tracefile_count", ctypes.c_uint64),
                        ("live_timer_interval", ctypes.c_uint),
                        ("align_to_64", ctypes.c_uint32), ("extended", Extended),
                        ("padding", ctypes.c_char * (_SYMBOL_NAME_LEN + 12))]

        class Channel(ctypes.Structure):
            _fields_ = [("name", ctypes.c_char * _SYMBOL_NAME_LEN),
                        ("enabled", ctypes.c_uint32), ("attr", ChannelAttr),
                        ("padding", ctypes.c_char * 16)]

        _TYPES.extend((Domain, Channel))
    return _TYPES


def error_text(status: int) -> str:
    """LTTng's words for an error status (negative or positive)."""
    lib = library()
    message = lib.lttng_strerror(-abs(status)) if lib else None
    return (message or b"").decode(errors="replace") or f"error {status}"


def session_call(function: str, name: str, what: str) -> bool:
    """function(name) of the library: True when done, False when the library or the
    function is missing. Raises LttngError (what: "cannot start session 'x'") when LTTng
    refused."""
    lib = library()
    if lib is None or not hasattr(lib, function):
        return False
    status = getattr(lib, function)(name.encode())
    if status < 0:
        raise LttngError(f"{what}: {error_text(status)}")
    return True


def data_pending_function():
    """lttng_data_pending(session name), or None."""
    lib = library()
    return lib.lttng_data_pending if lib else None


def daemon_alive() -> bool | None:
    """Whether a session daemon answers this user; None when the library cannot say."""
    lib = library()
    return None if lib is None else lib.lttng_session_daemon_alive() == 1


class _Handle:
    """An lttng_handle of a session's user-space domain (per-user buffers), destroyed on
    leaving the with block."""

    def __init__(self, lib, session: str):
        import ctypes

        domain_type, _ = channel_types()
        self.lib = lib
        self.domain = domain_type(type=DOMAIN_UST, buf_type=BUFFER_PER_UID)
        self.handle = lib.lttng_create_handle(session.encode(), ctypes.byref(self.domain))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        if self.handle:
            self.lib.lttng_destroy_handle(self.handle)

    def enable_channel(self, name: str, set_attributes) -> int | None:
        """lttng_enable_channel() of channel name, created with the defaults `lttng
        enable-channel` gives (lttng_channel_create() of this domain), then
        set_attributes(channel) run on it. None when the library gave no channel."""
        import ctypes

        channel = self.lib.lttng_channel_create(ctypes.byref(self.domain))
        if not channel:
            return None
        try:
            channel.contents.name = name.encode()
            channel.contents.enabled = 1
            set_attributes(channel.contents)
            return self.lib.lttng_enable_channel(self.handle, channel)
        finally:
            self.lib.lttng_channel_destroy(channel)


def enable_metadata_channel(name: str, switch_timer_us: int) -> bool:
    """lttng_enable_channel() of session name's user-space channel metadata with this
    switch timer, as `lttng enable-channel --userspace --session NAME --switch-timer N
    metadata` does it. True when LTTng answered, done or refused (the command would be
    refused the same way); False when the library cannot, or refused the request itself
    as invalid (what a structure read differently from this LTTng's would get, which the
    command, built with its own headers, would not): the caller runs the command then."""
    lib = library()
    if lib is None or not all(hasattr(lib, f) for f in _CHANNEL_FUNCTIONS):
        return False

    def timer(channel):
        channel.attr.switch_timer_interval = switch_timer_us

    with _Handle(lib, name) as handle:
        status = handle.enable_channel("metadata", timer) if handle.handle else None
    return status is not None and status != -ERR_INVALID


def can_set_up_sessions() -> bool:
    """Whether create_session() and set_up_channel() can work here (LTTng 2.12 and later)."""
    lib = library()
    return lib is not None and all(hasattr(lib, f) for f in _SESSION_SETUP_FUNCTIONS)


def create_session(name: str, output: str, trace_format: str | None) -> None:
    """A new session writing to the directory output, as `lttng create NAME --output
    OUTPUT [--trace-format F]` makes it: without trace_format, in the session daemon's
    default format. Raises LttngError when LTTng refused (or cannot set trace_format).
    Call only when can_set_up_sessions()."""
    lib = library()
    what = f"cannot create session {name!r}"
    descriptor = lib.lttng_session_descriptor_local_create(name.encode(), output.encode())
    if not descriptor:
        raise LttngError(f"{what}: liblttng-ctl made no session descriptor")
    try:
        if trace_format:
            setter = getattr(lib, "lttng_session_descriptor_set_trace_format", None)
            if setter is None or setter(descriptor, TRACE_FORMAT_CODES[trace_format]) != 0:
                raise LttngError(f"{what}: this LTTng cannot write {trace_format}")
        status = lib.lttng_create_session_ext(descriptor)
    finally:
        lib.lttng_session_descriptor_destroy(descriptor)
    if status != _LTTNG_OK:
        raise LttngError(f"{what}: {error_text(status)}")


def set_up_channel(session: str, channel: str, subbuf_size: int, num_subbuf: int,
                   events: str, contexts: tuple) -> None:
    """In session's user-space domain: channel (discard mode, these sub-buffers), the
    events of the pattern events enabled in it, and the contexts added to it, as `lttng
    enable-channel`, `enable-event` and `add-context` do. Raises LttngError when LTTng
    refused. Call only when can_set_up_sessions()."""
    import ctypes

    lib = library()

    def sizes(attributes):
        attributes.attr.overwrite = 0
        attributes.attr.subbuf_size = subbuf_size
        attributes.attr.num_subbuf = num_subbuf

    with _Handle(lib, session) as handle:
        if not handle.handle:
            raise LttngError(f"cannot create the {channel} channel: no handle of session "
                             f"{session!r}")
        status = handle.enable_channel(channel, sizes)
        if status is None or status < 0:
            raise LttngError(f"cannot create the {channel} channel: "
                             f"{error_text(status or -ERR_INVALID)}")
        event = lib.lttng_event_create()  # zeroed: a tracepoint, every log level
        if not event:
            raise LttngError("cannot enable the python events: liblttng-ctl made no event")
        try:
            name = events.encode()[:_SYMBOL_NAME_LEN - 1] + b"\0"
            ctypes.memmove(event + _EVENT_NAME_OFFSET, name, len(name))
            ctypes.c_int.from_address(event + _EVENT_LOGLEVEL_OFFSET).value = -1
            status = lib.lttng_enable_event(handle.handle, event, channel.encode())
        finally:
            lib.lttng_event_destroy(event)
        if status < 0:
            raise LttngError(f"cannot enable the python events: {error_text(status)}")
        for context in contexts:
            buffer = ctypes.create_string_buffer(_EVENT_CONTEXT_SIZE)
            ctypes.c_int.from_buffer(buffer).value = CONTEXT_TYPES[context]
            status = lib.lttng_add_context(handle.handle, buffer, None, channel.encode())
            if status < 0:
                raise LttngError(f"cannot add the contexts: {error_text(status)}")


def track_user(session: str, uid: int) -> None:
    """Records the user-space events of user uid's processes only, as `lttng track
    --userspace --vuid UID` does on a new session. Raises LttngError when LTTng refused.
    Call only when can_set_up_sessions()."""
    import ctypes

    lib = library()
    tracker = ctypes.c_void_p()
    what = f"cannot track the processes of user {uid}"
    code = lib.lttng_session_get_tracker_handle(
        session.encode(), DOMAIN_UST, _PROCESS_ATTR_VIRTUAL_USER_ID, ctypes.byref(tracker))
    if code != _LTTNG_OK:
        raise LttngError(f"{what}: {error_text(code)}")
    try:
        status = lib.lttng_process_attr_tracker_handle_set_tracking_policy(
            tracker, _TRACKING_POLICY_INCLUDE_SET)
        if status == 0:
            status = lib.lttng_process_attr_virtual_user_id_tracker_handle_add_uid(tracker, uid)
    finally:
        lib.lttng_process_attr_tracker_handle_destroy(tracker)
    if status != 0:  # enum lttng_process_attr_tracker_handle_status: LTTng has no words
        raise LttngError(f"{what}: the session daemon refused (tracker status {status})")
