// The fast mode: calls, returns and lines become compact records in a buffer
// of the thread's own, written to LTTng as one python:batch event per buffer
// (tracepoints/batch_records.hpp defines the record format). Registrations,
// threads, the process and C calls stay standard events: they are rare, and
// a reader puts everything back in time order (filter.pyust.expand). An
// asyncio task, its steps and its end are records too (python:task,
// python:task_step, python:task_end).
//
// Who touches a buffer, and what serialises them:
// - its thread appends records and writes the batch when it is full, with
//   the GIL held;
// - the session watcher writes every buffer every k_flush_period_ms, and the
//   exit paths write them all, also with the GIL held (or after
//   finalisation, when no Python runs any more) and with s_list.mutex, so a
//   reader knows that everything before a python:horizon is in the trace;
// - its thread's exit writes it without the GIL, under s_list.mutex.
//
// Record times come from the TSC when the kernel's own clock source is the
// TSC (so CLOCK_MONOTONIC is a linear function of it), else from
// CLOCK_MONOTONIC itself. Each batch carries a (TSC, CLOCK_MONOTONIC) pair
// read together at its start and at its end; the reader interpolates.
#include "hook/emitter.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include <pthread.h>
#include <unistd.h>
#include <x86intrin.h>

#include "batch_records.hpp"
#include "hook/python_compat.hpp"
#include "hook/tally.hpp"
#include "python_tp.h"

namespace pyust::hook {

namespace {

// Bytes of records per batch: the event stays under 4 KiB, LTTng's smallest
// sub-buffer, with its header, contexts and fixed fields.
constexpr std::uint32_t k_capacity = 3584;
using batch_records::k_call;
using batch_records::k_line;
using batch_records::k_max_record;
using batch_records::k_return;
using batch_records::k_unwind;
using batch_records::put_varint;

struct ThreadRecords {
    ThreadRecords* next = nullptr;
    ThreadRecords* prev = nullptr;
    std::int32_t tid = 0;
    std::uint64_t first = 0; // index of bytes' first record in the thread's sequence
    std::uint32_t count = 0;
    std::uint32_t size = 0;
    std::uint64_t begin_tsc = 0;
    std::uint64_t begin_ns = 0;
    std::uint64_t last_tsc = 0;
    std::uint32_t id_high = 0;
    std::uint8_t bytes[k_capacity];
};

struct List {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    ThreadRecords* head = nullptr;
    pthread_key_t key{};
    bool has_key = false;
};

List& s_list = *new List; // never destroyed: threads may exit during static destruction

thread_local ThreadRecords* t_records __attribute__((tls_model("initial-exec"))) = nullptr;

// The pid that near code ids carry (see registry.hpp); the child of a fork
// takes its own.
std::uint32_t s_pid = 0;

bool s_uses_tsc = false;

std::uint64_t monotonic_ns() noexcept
{
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u +
           static_cast<std::uint64_t>(t.tv_nsec);
}

inline std::uint64_t record_clock() noexcept
{
    return s_uses_tsc ? __rdtsc() : monotonic_ns();
}

struct ClockPair {
    std::uint64_t tsc;
    std::uint64_t ns;
};

// Both clocks at (nearly) the same instant: the TSC half-way between two
// readings that surround the CLOCK_MONOTONIC one, from the narrowest of three
// tries (an interrupt may widen one). Twice a batch, so cheap enough.
ClockPair read_pair() noexcept
{
    if (!s_uses_tsc) {
        const std::uint64_t ns = monotonic_ns();
        return {ns, ns};
    }
    ClockPair best{};
    std::uint64_t best_width = ~std::uint64_t{0};
    for (int attempt = 0; attempt < 3; ++attempt) {
        const std::uint64_t before = __rdtsc();
        const std::uint64_t ns = monotonic_ns();
        const std::uint64_t after = __rdtsc();
        if (after - before < best_width) {
            best_width = after - before;
            best = {before + best_width / 2, ns};
        }
    }
    return best;
}

// Whether CLOCK_MONOTONIC is the TSC scaled (the kernel's clock source is
// "tsc"), so interpolating between two pairs is exact up to NTP's slewing.
// PYUST_CLOCK=monotonic or =tsc overrides (for tests).
bool tsc_is_usable() noexcept
{
    if (const char* forced = std::getenv("PYUST_CLOCK")) {
        if (std::strcmp(forced, "monotonic") == 0)
            return false;
        if (std::strcmp(forced, "tsc") == 0)
            return true;
    }
    std::FILE* file =
        std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (file == nullptr)
        return false;
    char name[32] = {};
    const bool is_read = std::fgets(name, sizeof name, file) != nullptr;
    std::fclose(file);
    return is_read && std::strncmp(name, "tsc\n", 4) == 0;
}

void unlink(ThreadRecords& records) noexcept
{
    if (records.prev != nullptr)
        records.prev->next = records.next;
    else
        s_list.head = records.next;
    if (records.next != nullptr)
        records.next->prev = records.prev;
    records.next = records.prev = nullptr;
}

class BatchEmitter final : public Emitter {
public:
    // A session that records batches gets a rundown too (for its horizon).
    explicit BatchEmitter(Emitter& standard) noexcept
        : Emitter(&lttng_ust_tracepoint_python___code.state,
                  &lttng_ust_tracepoint_python___batch.state),
          m_standard(standard)
    {
    }

    void code(const CodeInfo& info) noexcept override { m_standard.code(info); }
    void call(const CodeInfo& info) noexcept override { append(k_call, info.id); }
    void ret(const CodeInfo& info, bool is_unwind) noexcept override
    {
        append(is_unwind ? k_unwind : k_return, info.id);
    }
    void line(const CodeInfo& info, std::uint32_t line) noexcept override
    {
        if (std::uint8_t* out = append(k_line, info.id)) {
            out = put_varint(out, line);
            t_records->size = static_cast<std::uint32_t>(out - t_records->bytes);
        }
    }
    void c_call(const char* name, const char* owner) noexcept override
    {
        m_standard.c_call(name, owner);
    }
    void c_return(bool has_raised) noexcept override { m_standard.c_return(has_raised); }
    void thread(std::int64_t tid, const char* name) noexcept override
    {
        m_standard.thread(tid, name);
    }
    void process(const char* version, const char* backend, bool has_lines, bool has_c_calls,
                 const char* command) noexcept override
    {
        m_standard.process(version, backend, has_lines, has_c_calls, command);
    }
    void lost_start(std::uint64_t lost_ns, std::uint64_t waited_ns) noexcept override
    {
        m_standard.lost_start(lost_ns, waited_ns);
    }
    // A task is a record (one a task: as many as its steps in a program of short tasks), unless
    // its name is too long for one, or no session records batches (any more: the hook goes
    // dormant only after a while) while one may record python:task.
    void task(std::uint64_t key, std::uint64_t parent, const char* name) noexcept override
    {
        const std::size_t size = std::strlen(name);
        if (size > batch_records::k_max_task_name || !is_recording()) {
            m_standard.task(key, parent, name);
            return;
        }
        if (std::uint8_t* out =
                append(k_line, batch_records::k_task_id, batch_records::k_max_task_record)) {
            out = put_varint(out, key);
            out = put_varint(out, parent);
            out = put_varint(out, size);
            std::memcpy(out, name, size);
            t_records->size = static_cast<std::uint32_t>(out + size - t_records->bytes);
        }
    }
    // A step is a record (batch_records.hpp): one per resumption of a task, about as many
    // as the calls of a program that awaits a lot.
    void task_step(std::uint64_t key, std::uint32_t resumed, std::uint8_t awaited,
                   std::uint64_t awaited_id, std::uint8_t thrown) noexcept override
    {
        if (std::uint8_t* out = append(k_line, batch_records::k_task_step_id)) {
            out = put_varint(out, key);
            out = put_varint(out, resumed);
            out = put_varint(out, awaited);
            out = put_varint(out, awaited_id);
            out = put_varint(out, thrown);
            t_records->size = static_cast<std::uint32_t>(out - t_records->bytes);
        }
    }
    // An end is a record too: one per task, as many as the steps of a program of short tasks.
    void task_end(std::uint64_t key, std::uint8_t state) noexcept override
    {
        if (std::uint8_t* out = append(k_line, batch_records::k_task_end_id)) {
            out = put_varint(out, key);
            out = put_varint(out, state);
            t_records->size = static_cast<std::uint32_t>(out - t_records->bytes);
        }
    }
    bool is_recording() const noexcept override
    {
        return lttng_ust_tracepoint_enabled(python, batch);
    }
    void begin() noexcept override
    {
        pthread_mutex_lock(&s_list.mutex);
        for (ThreadRecords* r = s_list.head; r != nullptr; r = r->next)
            r->count = r->size = 0;
        pthread_mutex_unlock(&s_list.mutex);
        lttng_ust_tracepoint(python, horizon, static_cast<std::int32_t>(s_pid), 0);
    }

    void flush_all(bool is_final) noexcept override
    {
        pthread_mutex_lock(&s_list.mutex);
        for (ThreadRecords* r = s_list.head; r != nullptr; r = r->next)
            write(*r);
        pthread_mutex_unlock(&s_list.mutex);
        lttng_ust_tracepoint(python, horizon, static_cast<std::int32_t>(s_pid), is_final ? 1 : 0);
    }

    void after_fork_child(std::uint32_t pid) noexcept override
    {
        s_pid = pid;
        new (&s_list.mutex) pthread_mutex_t(PTHREAD_MUTEX_INITIALIZER);
        // The parent's records are the parent's to write; its other threads
        // do not exist here.
        ThreadRecords* self = t_records;
        for (ThreadRecords* r = s_list.head; r != nullptr;) {
            ThreadRecords* next = r->next;
            if (r != self)
                delete r;
            r = next;
        }
        s_list.head = self;
        if (self != nullptr) {
            self->next = self->prev = nullptr;
            self->tid = static_cast<std::int32_t>(current_tid());
            self->first = 0;
            self->count = self->size = 0;
        }
    }

    static BatchEmitter& instance() noexcept;

    static void init(std::uint32_t pid) noexcept
    {
        s_pid = pid;
        s_uses_tsc = tsc_is_usable();
        s_list.has_key = pthread_key_create(&s_list.key, on_thread_exit) == 0;
    }

private:
    // Appends a record's kind, time and code id, with room for a record of
    // room bytes; returns where its further fields go (the caller then sets
    // size), or nullptr when nothing is recorded (no session, no memory).
    std::uint8_t* append(batch_records::Kind kind, std::uint64_t id,
                         std::uint32_t room = k_max_record) noexcept
    {
        if (!lttng_ust_tracepoint_enabled(python, batch))
            return nullptr;
        ThreadRecords* r = t_records;
        if (__builtin_expect(r == nullptr, 0) && (r = attach()) == nullptr)
            return nullptr;
        if (__builtin_expect(r->size > k_capacity - room, 0))
            write(*r);
        std::uint64_t now;
        if (r->count == 0) {
            const ClockPair pair = read_pair();
            r->begin_tsc = r->last_tsc = now = pair.tsc;
            r->begin_ns = pair.ns;
            r->id_high = s_pid;
        } else {
            now = record_clock();
        }
        // The TSC of another CPU may lag by a few cycles: never go backwards.
        const std::uint64_t advance = now > r->last_tsc ? now - r->last_tsc : 0;
        r->last_tsc += advance;
        std::uint8_t* out =
            batch_records::put_record(r->bytes + r->size, kind, advance, id, r->id_high);
        ++r->count;
        r->size = static_cast<std::uint32_t>(out - r->bytes);
        return out;
    }

    // The calling thread's records: allocated at its first record, written
    // and freed when it exits.
    static ThreadRecords* attach() noexcept
    {
        auto* r = new (std::nothrow) ThreadRecords;
        if (r == nullptr)
            return nullptr;
        r->tid = static_cast<std::int32_t>(current_tid());
        if (s_list.has_key)
            pthread_setspecific(s_list.key, r);
        pthread_mutex_lock(&s_list.mutex);
        r->next = s_list.head;
        if (s_list.head != nullptr)
            s_list.head->prev = r;
        s_list.head = r;
        pthread_mutex_unlock(&s_list.mutex);
        t_records = r;
        return r;
    }

    static void on_thread_exit(void* value) noexcept
    {
        auto* r = static_cast<ThreadRecords*>(value);
        pthread_mutex_lock(&s_list.mutex);
        instance().write(*r);
        unlink(*r);
        pthread_mutex_unlock(&s_list.mutex);
        t_records = nullptr;
        delete r;
    }

    // Writes the thread's records as one python:batch (when a session
    // records them) and empties the buffer.
    void write(ThreadRecords& r) noexcept
    {
        if (r.count == 0)
            return;
        const ClockPair end = read_pair();
        const pyust_batch_header header{
            static_cast<std::int32_t>(s_pid),
            r.tid,
            r.first,
            r.count,
            r.id_high,
            r.begin_tsc,
            r.begin_ns,
            end.tsc > r.last_tsc ? end.tsc : r.last_tsc,
            end.ns,
            r.size,
        };
        if (lttng_ust_tracepoint_enabled(python, batch)) {
            tally().records.fetch_add(r.count, std::memory_order_relaxed);
            lttng_ust_do_tracepoint(python, batch, &header, r.bytes);
        }
        r.first += r.count;
        r.count = r.size = 0;
    }

    Emitter& m_standard;
};

BatchEmitter& BatchEmitter::instance() noexcept
{
    static BatchEmitter& emitter = *new BatchEmitter(lttng_emitter());
    return emitter;
}

// Interpreter exit, after finalisation (Py_AtExit): no Python code runs any
// more, so every buffer can be written without the GIL.
void on_interpreter_exit() noexcept
{
    BatchEmitter::instance().flush_all(true);
}

} // namespace

Emitter& batch_emitter() noexcept
{
    static bool is_initialised = [] {
        BatchEmitter::init(static_cast<std::uint32_t>(getpid()));
        Py_AtExit(on_interpreter_exit);
        return true;
    }();
    (void)is_initialised;
    return BatchEmitter::instance();
}

} // namespace pyust::hook
