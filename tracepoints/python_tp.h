/*
 * The LTTng-UST provider `python`: the events pyust's hook emits for a traced
 * Python program. Users enable them with `lttng enable-event -u 'python:*'`.
 *
 * Event model (the README's event reference says the same for users):
 *
 * - Code objects are named by a 64-bit id. Its high 32 bits are the pid of the
 *   process that registered the code object, its low 32 bits a counter in that
 *   process, so an id stays unique across fork() without any coordination.
 * - python:code registers an id once (module, qualified name, file, first line);
 *   pyust re-emits every registration when a session starts after the program
 *   did (a "rundown"), so names are never lost to a late session.
 * - python:call also carries the qualified name, so that a plain
 *   `babeltrace2 TRACE` dump is readable without any analysis. Returns and
 *   lines carry integers only: they are the bulk of a trace.
 * - The thread and process ids come from LTTng's vpid and vtid contexts.
 *
 * This header follows lttng-ust's multi-read idiom: python_probe.cpp includes
 * it with LTTNG_UST_TRACEPOINT_CREATE_PROBES to generate the probes; every
 * other user includes it plainly to call lttng_ust_tracepoint(python, ...).
 */

#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER python

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./python_tp.h"

#if !defined(PYUST_TRACEPOINTS_PYTHON_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define PYUST_TRACEPOINTS_PYTHON_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

/*
 * python:code - a code object seen for the first time (or re-emitted by a
 * rundown).
 *   id          the code object's id, used by every other event
 *   module      the module's __name__ when the code first ran ("__main__" for
 *               the script), "?" when it is not a str
 *   qualname    the qualified name (co_qualname; co_name before Python 3.11)
 *   file        co_filename, as the interpreter has it
 *   first_line  co_firstlineno
 */
LTTNG_UST_TRACEPOINT_EVENT(python, code,
    LTTNG_UST_TP_ARGS(uint64_t, id, const char *, module, const char *, qualname,
                      const char *, file, uint32_t, first_line),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, id, id)
        lttng_ust_field_string(module, module)
        lttng_ust_field_string(qualname, qualname)
        lttng_ust_field_string(file, file)
        lttng_ust_field_integer(uint32_t, first_line, first_line)))

/*
 * python:call - a Python frame starts running: a function call, and also
 * every resumption of a generator or coroutine.
 *   id    the code object's id (see python:code)
 *   name  its qualified name, for readable plain dumps
 */
LTTNG_UST_TRACEPOINT_EVENT(python, call,
    LTTNG_UST_TP_ARGS(uint64_t, id, const char *, name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, id, id)
        lttng_ust_field_string(name, name)))

/*
 * python:return - the frame opened by the matching python:call stops
 * running: it returned, yielded, or an exception left it.
 *   id      the code object's id
 *   unwind  1 when an exception propagates out of the frame, else 0
 */
LTTNG_UST_TRACEPOINT_EVENT(python, return,
    LTTNG_UST_TP_ARGS(uint64_t, id, uint8_t, unwind),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, id, id)
        lttng_ust_field_integer(uint8_t, unwind, unwind)))

/*
 * python:line - the interpreter is about to run a new line (only with line
 * tracing on, and only for the modules it is on for).
 *   id    the code object's id
 *   line  the line number in the code object's file
 */
LTTNG_UST_TRACEPOINT_EVENT(python, line,
    LTTNG_UST_TP_ARGS(uint64_t, id, uint32_t, line),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, id, id)
        lttng_ust_field_integer(uint32_t, line, line)))

/*
 * python:c_call - a Python frame calls a function implemented in C (only
 * with C-call tracing on).
 *   name   the C function's name (PyMethodDef.ml_name)
 *   owner  its module, or the type it is a method of
 */
LTTNG_UST_TRACEPOINT_EVENT(python, c_call,
    LTTNG_UST_TP_ARGS(const char *, name, const char *, owner),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_string(name, name)
        lttng_ust_field_string(owner, owner)))

/*
 * python:c_return - the C function of the matching python:c_call is done.
 *   exception  1 when it raised, else 0
 */
LTTNG_UST_TRACEPOINT_EVENT(python, c_return,
    LTTNG_UST_TP_ARGS(uint8_t, exception),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint8_t, exception, exception)))

/*
 * python:thread - names a thread (emitted when pyust starts tracing it, and
 * by every rundown).
 *   tid   the thread's kernel id (threading's native_id, LTTng's vtid)
 *   name  threading.Thread.name at that time
 */
LTTNG_UST_TRACEPOINT_EVENT(python, thread,
    LTTNG_UST_TP_ARGS(int64_t, tid, const char *, name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(int64_t, tid, tid)
        lttng_ust_field_string(name, name)))

/*
 * python:process - describes the traced interpreter (emitted when tracing
 * starts, and by every rundown).
 *   version  the interpreter's version ("3.11.7")
 *   backend  the hook back end: "setprofile" or "monitoring"
 *   lines    1 when line tracing is on
 *   c_calls  1 when C-call tracing is on
 */
LTTNG_UST_TRACEPOINT_EVENT(python, process,
    LTTNG_UST_TP_ARGS(const char *, version, const char *, backend, uint8_t, lines,
                      uint8_t, c_calls),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_string(version, version)
        lttng_ust_field_string(backend, backend)
        lttng_ust_field_integer(uint8_t, lines, lines)
        lttng_ust_field_integer(uint8_t, c_calls, c_calls)))

#endif /* PYUST_TRACEPOINTS_PYTHON_TP_H */

#include <lttng/tracepoint-event.h>
