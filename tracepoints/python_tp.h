/*
 * The LTTng-UST provider `python`: the events pyust's hook emits for a traced
 * Python program. Users enable them with `lttng enable-event -u 'python:*'`.
 *
 * Event model (doc/events.md says the same for users):
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

#ifndef PYUST_BATCH_HEADER_DEFINED
#define PYUST_BATCH_HEADER_DEFINED
/* The fixed fields of python:batch (too many for tracepoint arguments). */
struct pyust_batch_header {
    int32_t pid;
    int32_t tid;
    uint64_t first;
    uint32_t count;
    uint32_t id_high;
    uint64_t begin_tsc;
    uint64_t begin_ns;
    uint64_t end_tsc;
    uint64_t end_ns;
    uint32_t size; /* bytes of records */
};
#endif

/*
 * python:code - a code object seen for the first time (or re-emitted by a
 * rundown).
 *   id          the code object's id, used by every other event
 *   module      the module's __name__ when the code first ran ("__main__" for
 *               the script), "?" when it is not a str or is empty
 *   qualname    the qualified name (co_qualname; co_name before Python 3.11)
 *   file        co_filename, as the interpreter has it; "<no file name>" when
 *               it is empty (babeltrace2 2.0.4 prints an empty string field
 *               as the value the field had in an earlier event)
 *   first_line  co_firstlineno
 *   name        co_name: differs from the qualified name's last part when the
 *               code was renamed (code.replace(co_name=...), as numpy 1.24's
 *               dispatch wrappers are), which is what tells such code apart
 * No string field is ever empty.
 */
LTTNG_UST_TRACEPOINT_EVENT(python, code,
    LTTNG_UST_TP_ARGS(uint64_t, id, const char *, module, const char *, qualname,
                      const char *, file, uint32_t, first_line, const char *, name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, id, id)
        lttng_ust_field_string(module, module)
        lttng_ust_field_string(qualname, qualname)
        lttng_ust_field_string(file, file)
        lttng_ust_field_integer(uint32_t, first_line, first_line)
        lttng_ust_field_string(name, name)))

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
 *   command  the process's command line as `python PROGRAM ARGS` gives it
 *            (sys.orig_argv; under `pyust run`, without pyust's own part),
 *            quoted as a POSIX shell would need it and cut at 4096 bytes
 *            (ending in "..." then). Traces of earlier pyust versions lack it.
 */
LTTNG_UST_TRACEPOINT_EVENT(python, process,
    LTTNG_UST_TP_ARGS(const char *, version, const char *, backend, uint8_t, lines,
                      uint8_t, c_calls, const char *, command),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_string(version, version)
        lttng_ust_field_string(backend, backend)
        lttng_ust_field_integer(uint8_t, lines, lines)
        lttng_ust_field_integer(uint8_t, c_calls, c_calls)
        lttng_ust_field_string(command, command)))

/*
 * python:lost_start - the session began recording this process late: the
 * process had been running for lost_ns when its first events reached the
 * trace (this event comes right after the rundown that names its code), so
 * the trace lacks its start. Emitted once per start() (and per os.fork()
 * child) that was asked to wait for the session (`pyust run`, its children,
 * `pyust attach`) and gave up waiting: LTTng-UST registered with the session
 * daemon later than the wait allowed.
 *   lost_ns    how long the process ran unrecorded, from the moment pyust
 *              let it run (its first line; the attach point) to this event
 *   waited_ns  how long pyust had waited for the session before that
 * Traces of earlier pyust versions never have it.
 */
LTTNG_UST_TRACEPOINT_EVENT(python, lost_start,
    LTTNG_UST_TP_ARGS(uint64_t, lost_ns, uint64_t, waited_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, lost_ns, lost_ns)
        lttng_ust_field_integer(uint64_t, waited_ns, waited_ns)))

/*
 * python:task - an asyncio task appears (issue 29; a prototype: fields may
 * change). Emitted when the event loop's create_task (asyncio.base_events'
 * BaseEventLoop.create_task) returns it, and again when asyncio.create_task
 * or (3.11, 3.12) TaskGroup.create_task, which name the task only then,
 * return it with another name: the last python:task of a key before the
 * task's second step (or its end) names it. A task whose first step comes
 * before create_task returned it (an eager task, 3.12+) or that no
 * create_task made (asyncio.Task() called directly) is named just before
 * that step's python:task_step. In the fast mode, a record of python:batch
 * (expanded into this event), unless its name is over 100 bytes.
 *   task    the task's key: the address of its coroutine object, what every
 *           python:task_step of the task carries (unique among the tasks
 *           alive at a time: a key seen again after its task ended is
 *           another task's)
 *   parent  the key of the task whose step created it, 0 outside any task
 *           (for a task no create_task made: the step its first step ran
 *           in, an eager start's creator, else 0)
 *   name    Task.get_name()
 */
LTTNG_UST_TRACEPOINT_EVENT(python, task,
    LTTNG_UST_TP_ARGS(uint64_t, task, uint64_t, parent, const char *, name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, task, task)
        lttng_ust_field_integer_hex(uint64_t, parent, parent)
        lttng_ust_field_string(name, name)))

/*
 * python:task_step - the calling thread starts a step of an asyncio task (or
 * of any coroutine driven from outside a coroutine, as a task's step drives
 * its own): emitted just before the python:call of the coroutine's frame
 * (its start or its resumption), which is the task's "root" frame: every
 * frame called until that frame's python:return runs for the task. The root
 * frame's call and return are recorded whatever the module filter says. In
 * the fast mode, a record of python:batch (expanded into this event).
 *   task        the coroutine object's address (python:task names the tasks)
 *   resumed     how many traced frames of the task's await chain this step
 *               resumes, the root included: the step's first `resumed`
 *               python:call events (the root's, then each one's awaited
 *               frame, outermost first) resume frames suspended by the
 *               task's previous step, not new calls; 0 on the task's first
 *               step. Counts the frames of coroutines (async def, and
 *               generators made coroutines by types.coroutine) and of
 *               async generators suspended in an await of their body, not
 *               those of other generators nor an async generator's frame
 *               that its yield suspended.
 *   awaited     what the suspension that this step ends waited on: 0 none
 *               (the task's first step), 1 a bare yield (asyncio.sleep(0)),
 *               2 a future (asyncio.sleep(d), I/O, any awaitable that is not
 *               one of the next two), 3 a task (`await task`), 4 gather's
 *               future
 *   awaited_id  the future's address (2, 4), the awaited task's key (3),
 *               else 0
 *   thrown      0: the step resumes the task's await chain from its root,
 *               outermost first (or starts the task). 1: an exception
 *               thrown into the task (a cancellation, a timeout, a failed
 *               future it awaited) resumes the chain's innermost frame
 *               first: the step's root is the `resumed`-th frame of the
 *               chain, the `resumed - 1` frames outside it stay suspended
 *               (it is not recorded when the module filter leaves it out,
 *               nor counted in `resumed`), and the step ends at its
 *               return. 2: the same asyncio step goes on: the frame just
 *               out of the one whose return ended the last step resumes
 *               (with its exception or its value), as the root of a step
 *               of its own, `resumed` saying where it is as for 1; the
 *               task's root ends such a cascade.
 */
LTTNG_UST_TRACEPOINT_EVENT(python, task_step,
    LTTNG_UST_TP_ARGS(uint64_t, task, uint32_t, resumed, uint8_t, awaited, uint64_t, awaited_id,
                      uint8_t, thrown),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, task, task)
        lttng_ust_field_integer(uint32_t, resumed, resumed)
        lttng_ust_field_integer(uint8_t, awaited, awaited)
        lttng_ust_field_integer_hex(uint64_t, awaited_id, awaited_id)
        lttng_ust_field_integer(uint8_t, thrown, thrown)))

/*
 * python:task_end - a task's coroutine finished: its root frame returned or
 * raised for good (emitted just after that frame's python:return; on 3.10
 * and 3.11's profile function back end, when a root raised, at the return of
 * the frame that ran the step: Handle._run, the pure-Python Task's __step).
 * The key may name another task from then on. In the fast mode, a record of
 * python:batch (expanded into this event).
 *   task   the task's key (python:task)
 *   state  0 returned, 1 raised an exception, 2 was cancelled (raised
 *          asyncio.CancelledError)
 */
LTTNG_UST_TRACEPOINT_EVENT(python, task_end,
    LTTNG_UST_TP_ARGS(uint64_t, task, uint8_t, state),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, task, task)
        lttng_ust_field_integer(uint8_t, state, state)))

/*
 * python:batch - fast mode (`pyust run --fast`): many call, return, line,
 * task, task_step and task_end events of one thread in one LTTng event.
 * pyust's babeltrace2 filter filter.pyust.expand turns each batch back into
 * the python:call, python:return, python:line, python:task, python:task_step
 * and python:task_end events the standard mode would have recorded, in time
 * order.
 *   pid, tid   the process and thread that took the records (the batch may
 *              be written by another thread of the process: use these, not
 *              the vpid/vtid contexts)
 *   first      index of the batch's first record in the thread's sequence
 *              of records (0 for the thread's first one): a gap to the
 *              previous batch's first + count is records the tracer lost
 *   count      number of records in the batch
 *   id_high    high 32 bits of the code ids of "near" records
 *   begin_tsc, begin_ns, end_tsc, end_ns
 *              two readings of the record clock ("tsc") taken together with
 *              LTTng's clock (CLOCK_MONOTONIC, in ns): one before the first
 *              record, one when the batch was written. A record's time is
 *              begin_ns + (tsc - begin_tsc) * (end_ns - begin_ns) /
 *              (end_tsc - begin_tsc), or begin_ns when end_tsc == begin_tsc.
 *              When the record clock is CLOCK_MONOTONIC itself, tsc == ns.
 *   records    count records, back to back: each a varint of its kind and
 *              the record clock's advance since the previous record (since
 *              begin_tsc for the first one), then the code id (its low 32
 *              bits when the high half is id_high), then a line record's
 *              line number (a task step: a far line record of code id 0,
 *              then its fields). batch_records.hpp defines the layout field by
 *              field, for the hook that writes it and the filter that reads
 *              it.
 */
LTTNG_UST_TRACEPOINT_EVENT(python, batch,
    LTTNG_UST_TP_ARGS(const struct pyust_batch_header *, h, const uint8_t *, records),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(int32_t, pid, h->pid)
        lttng_ust_field_integer(int32_t, tid, h->tid)
        lttng_ust_field_integer(uint64_t, first, h->first)
        lttng_ust_field_integer(uint32_t, count, h->count)
        lttng_ust_field_integer_hex(uint32_t, id_high, h->id_high)
        lttng_ust_field_integer(uint64_t, begin_tsc, h->begin_tsc)
        lttng_ust_field_integer(uint64_t, begin_ns, h->begin_ns)
        lttng_ust_field_integer(uint64_t, end_tsc, h->end_tsc)
        lttng_ust_field_integer(uint64_t, end_ns, h->end_ns)
        lttng_ust_field_sequence_hex(uint8_t, records, records, uint32_t, h->size)))

/*
 * python:horizon - fast mode: every record the process took before this
 * event's time is in a python:batch written before it. pyust emits one when
 * fast recording starts, then every few tens of milliseconds while it runs,
 * and a final one when the process stops recording (stop(), exit). A reader
 * that puts batches back in time order waits for each fast-mode process's
 * horizon before it lets later events through.
 *   pid    the process
 *   final  1: the process records no more batches (until a new horizon)
 */
LTTNG_UST_TRACEPOINT_EVENT(python, horizon,
    LTTNG_UST_TP_ARGS(int32_t, pid, uint8_t, final),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(int32_t, pid, pid)
        lttng_ust_field_integer(uint8_t, final, final)))

/*
 * Log levels, so that `lttng enable-event -u 'python:*' --loglevel LEVEL` selects as it does
 * for other providers (LEVEL and every more severe one):
 *   TRACE_INFO            code, thread, process, lost_start, task: what ran, by whom (names,
 *                         no timeline), and what the trace lacks of it
 *   TRACE_DEBUG_FUNCTION  call, return, c_call, c_return, task_step, task_end, and the fast
 *                         mode's batch and horizon: the timeline of functions
 *   TRACE_DEBUG_LINE      line: the most verbose
 * Without --loglevel, every event is enabled, as before.
 */
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, code, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, thread, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, process, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, lost_start, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, task, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, call, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, return, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, c_call, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, c_return, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, task_step, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, task_end, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, batch, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, horizon, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION)
LTTNG_UST_TRACEPOINT_LOGLEVEL(python, line, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_LINE)

#endif /* PYUST_TRACEPOINTS_PYTHON_TP_H */

#include <lttng/tracepoint-event.h>
