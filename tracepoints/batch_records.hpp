// The records of python:batch (python_tp.h), the fast mode's event: their byte
// layout, defined once for the two ends that speak it. The hook writes records
// with put_record and put_varint (src/hook/batch_emitter.cpp); the plugin's
// filter.pyust.expand reads them with read_varint and the head's helpers
// (src/plugin/expand/records.cpp). Plain C++17: no LTTng, no Python, no
// babeltrace2, so that tests/unit/test_records.cpp round-trips one through the
// other.
//
// The writer is on the hook's per-event path: everything here is constexpr or
// inline, and put_record has the one branch the layout needs (near or far).
//
// Layout. A batch's records field holds its count records back to back, in
// the order its thread took them (time order), without padding or terminator.
// Every field is an unsigned LEB128 varint: 7 bits a byte, least significant
// group first, bit 7 set on every byte but the last; a value below 2^(7n)
// takes n bytes (127: 1, 128: 2, 2^32 - 1: 5, 2^64 - 1: 10).
//
//   head     advance << 3 | far << 2 | kind                   1 to 10 bytes
//            kind     bits 0-1: 0 call, 1 return, 2 return by an exception
//                     (unwind), 3 line (Kind)
//            far      bit 2 (k_far): the id field carries all 64 bits of the
//                     code id. Clear: it carries the low 32 bits, and the
//                     high 32 are the batch's id_high (the writing process's
//                     pid; see python_tp.h for the id scheme): "near"
//            advance  bits 3-63: record-clock ticks since the batch's
//                     previous record (since begin_tsc for its first), at
//                     most k_max_advance = 2^61 - 1
//   id       the code id: near, its low 32 bits        1 to 5 bytes
//                         far, all 64 bits             1 to 10 bytes
//   line     line records (kind 3) only: the line      1 to 5 bytes
//            number, at most k_max_line = 2^32 - 1
//
// A task step (python:task_step, an asyncio task's step starts: see
// python_tp.h) is a far line record of code id 0, which no code has (a code
// id's high half is a pid: put_record makes it far), whose line field is its
// own fields instead (python:task_step's, python_tp.h says what they mean):
//   task        the task's key                         1 to 10 bytes
//   resumed     at most 2^32 - 1                       1 to 5 bytes
//   awaited     at most k_max_awaited = 4              1 byte
//   awaited_id                                         1 to 10 bytes
//   thrown      at most k_max_thrown = 2               1 byte
// A task end (python:task_end, a task's coroutine finished) is the same with
// code id 1 (k_task_end_id), and python:task_end's fields:
//   task        the task's key                         1 to 10 bytes
//   state       at most k_max_state = 2                1 byte
//
// A task (python:task, an asyncio task appears) is the same with code id 2
// (k_task_id), and python:task's fields, its name as its length and bytes:
//   task        the task's key                         1 to 10 bytes
//   parent      its creator's key, 0 for none          1 to 10 bytes
//   size        the name's length in bytes, at most
//               k_max_task_name = 100                  1 byte
//   name        size bytes of UTF-8, no terminator
// (a longer name is no record: the hook emits python:task itself).
//
// A record thus takes 2 to k_max_record = 38 bytes (a task step: 7 to 38, a task end: 4 to 22),
// and a task 5 to k_max_task_record = 132; the writer needs that much room at out. A record's time is its record-clock reading (begin_tsc
// plus the advances so far) mapped to ns by the batch's two clock pairs (see
// python:batch in python_tp.h).
//
// What the reader refuses, naming the first bad record (check_records):
// - a varint the bytes end in ("truncated record"), which includes a line
//   record without its line and a task step without its fields;
// - a varint of more than 64 bits ("a varint exceeds 64 bits"): a 10th byte
//   above 1;
// - a near id above k_max_near_id, a line above k_max_line; a task step's
//   resumed above 2^32 - 1, awaited above k_max_awaited or thrown above
//   k_max_thrown; a task end's state above k_max_state; a task's size above
//   k_max_task_name;
// - advances whose sum passes 2^64 - 1 - begin_tsc (the record clock
//   overflows);
// - a batch whose records are not exactly count (a cut at a record's end).
#pragma once

#include <cstdint>

namespace pyust::batch_records {

// A record's kind: bits 0-1 of its head.
enum Kind : std::uint64_t { k_call = 0, k_return = 1, k_unwind = 2, k_line = 3 };

constexpr std::uint64_t k_kind_mask = 3;  // the head's kind bits
constexpr std::uint64_t k_far = 4;        // the head's bit for a far (64-bit) id
constexpr unsigned k_advance_shift = 3;   // the head's advance starts at this bit
constexpr std::uint64_t k_max_advance = ~std::uint64_t{0} >> k_advance_shift;
constexpr std::uint64_t k_max_near_id = 0xffffffffu;
constexpr std::uint64_t k_max_line = 0xffffffffu;
constexpr unsigned k_max_varint = 10; // bytes of the largest varint (2^64 - 1)
constexpr std::uint64_t k_task_step_id = 0; // the code id of a task step's record
constexpr std::uint64_t k_max_awaited = 4;   // a task step's largest awaited
constexpr std::uint64_t k_max_thrown = 2;    // a task step's largest thrown
constexpr std::uint64_t k_task_end_id = 1;  // the code id of a task end's record
constexpr std::uint64_t k_max_state = 2;    // a task end's largest state
constexpr std::uint64_t k_task_id = 2;      // the code id of a task's record
constexpr std::uint64_t k_max_task_name = 100; // the bytes of a task's longest name in a record

// The bytes put_varint takes for value. noexcept.
constexpr unsigned varint_width(std::uint64_t value) noexcept
{
    unsigned width = 1;
    for (; value >= 0x80; value >>= 7)
        ++width;
    return width;
}

static_assert(varint_width(~std::uint64_t{0}) == k_max_varint);

// The longest record, a task step: a head with the largest advance, id 0, the largest key,
// resumed and awaited_id. (A line record takes at most 10 + 10 + 5.)
constexpr std::uint32_t k_max_record = k_max_varint + varint_width(k_task_step_id) +
                                       k_max_varint + varint_width(0xffffffffu) +
                                       varint_width(k_max_awaited) + k_max_varint +
                                       varint_width(k_max_thrown);
static_assert(k_max_varint + k_max_varint + varint_width(k_max_line) <= k_max_record);
static_assert(k_max_varint + varint_width(k_task_end_id) + k_max_varint +
                  varint_width(k_max_state) <=
              k_max_record);

// The longest task record: a head with the largest advance, id 2, the largest keys, the longest
// name.
constexpr std::uint32_t k_max_task_record = k_max_varint + varint_width(k_task_id) +
                                            k_max_varint + k_max_varint +
                                            varint_width(k_max_task_name) + k_max_task_name;

// A head's kind, far bit and advance. noexcept.
constexpr Kind kind_of(std::uint64_t head) noexcept
{
    return static_cast<Kind>(head & k_kind_mask);
}
constexpr bool is_far(std::uint64_t head) noexcept { return (head & k_far) != 0; }
constexpr std::uint64_t advance_of(std::uint64_t head) noexcept { return head >> k_advance_shift; }
// Whether a record of kind has a line field. noexcept.
constexpr bool has_line(Kind kind) noexcept { return kind == k_line; }
// Whether a record of this head and (far, whole) id is a task step, a task end, a task.
// noexcept.
constexpr bool is_task_step(std::uint64_t head, std::uint64_t id) noexcept
{
    return kind_of(head) == k_line && is_far(head) && id == k_task_step_id;
}
constexpr bool is_task_end(std::uint64_t head, std::uint64_t id) noexcept
{
    return kind_of(head) == k_line && is_far(head) && id == k_task_end_id;
}
constexpr bool is_task(std::uint64_t head, std::uint64_t id) noexcept
{
    return kind_of(head) == k_line && is_far(head) && id == k_task_id;
}

// The code id of a near record: the batch's id_high above the low half read.
// Precondition: low <= k_max_near_id. noexcept.
constexpr std::uint64_t near_id(std::uint32_t id_high, std::uint64_t low) noexcept
{
    return static_cast<std::uint64_t>(id_high) << 32 | low;
}

// Writes value as a varint at out; returns the end of what it wrote (at most
// k_max_varint bytes). noexcept.
inline std::uint8_t* put_varint(std::uint8_t* out, std::uint64_t value) noexcept
{
    while (value >= 0x80) {
        *out++ = static_cast<std::uint8_t>(value | 0x80);
        value >>= 7;
    }
    *out++ = static_cast<std::uint8_t>(value);
    return out;
}

// Writes a record's head and id: its kind, its advance (<= k_max_advance) and
// code id, near when the id's high half is the batch's id_high, else far.
// Returns where a line record's line goes (put_varint), or the record's end.
// Precondition: k_max_record bytes of room at out. noexcept.
inline std::uint8_t* put_record(std::uint8_t* out, Kind kind, std::uint64_t advance,
                                std::uint64_t id, std::uint32_t id_high) noexcept
{
    if ((id >> 32) == id_high) {
        out = put_varint(out, advance << k_advance_shift | kind);
        return put_varint(out, id & k_max_near_id);
    }
    out = put_varint(out, advance << k_advance_shift | kind | k_far);
    return put_varint(out, id);
}

// Reads a varint at at (advancing it past the varint) into value. Returns
// null, or what is wrong: the bytes end before the varint does, or it does not
// fit 64 bits. noexcept.
inline const char* read_varint(const std::uint8_t*& at, const std::uint8_t* end,
                               std::uint64_t& value) noexcept
{
    value = 0;
    for (unsigned shift = 0; at < end; shift += 7) {
        const std::uint8_t byte = *at++;
        if (shift == 63 && byte > 1)
            return "a varint exceeds 64 bits";
        value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return nullptr;
    }
    return "truncated record";
}

} // namespace pyust::batch_records
