// Unit tests of the python:batch records: the plugin's decoding (src/plugin/expand/records.hpp),
// record times between the batch's two clock readings, near and far ids, line numbers, tasks, task
// steps and ends, and every fault a damaged batch can have. The bytes come from the hook's own
// writer, in the header that defines the layout for both ends (tracepoints/batch_records.hpp), so
// that what the hook writes is tested to read back exactly, at every field's widths.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "batch_records.hpp"
#include "plugin/expand/records.hpp"

using namespace pyust::plugin::expand;

namespace {

namespace encoding = pyust::batch_records;

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t value)
{
    std::uint8_t bytes[10];
    out.insert(out.end(), bytes, encoding::put_varint(bytes, value));
}

// kind: 0 call, 1 return, 2 unwinding return, 3 line; +4: the id is a far one (all 64 bits).
// Written field by field, so that a test can write what the hook never would (a far flag
// on a near id, a bad kind).
void put_record(std::vector<std::uint8_t>& out, unsigned kind, std::uint64_t advance,
                std::uint64_t id, std::uint64_t line = 0)
{
    put_varint(out, kind | advance << encoding::k_advance_shift);
    put_varint(out, id);
    if (encoding::has_line(encoding::kind_of(kind)))
        put_varint(out, line);
}

// A record as the hook writes it (encoding::put_record), for a batch of id_high.
void hook_record(std::vector<std::uint8_t>& out, encoding::Kind kind, std::uint64_t advance,
                 std::uint64_t id, std::uint32_t id_high, std::uint32_t line = 0)
{
    std::uint8_t bytes[encoding::k_max_record];
    std::uint8_t* end = encoding::put_record(bytes, kind, advance, id, id_high);
    if (kind == encoding::k_line)
        end = encoding::put_varint(end, line);
    out.insert(out.end(), bytes, end);
}

// A batch whose clock (tsc) runs at 2 ticks per ns from tsc 1000 at 5000 ns.
BatchHeader header(std::uint32_t count)
{
    BatchHeader h;
    h.pid = 42;
    h.tid = 43;
    h.count = count;
    h.id_high = 0x2a;
    h.begin_tsc = 1000;
    h.begin_ns = 5000;
    h.end_tsc = 3000;
    h.end_ns = 6000;
    return h;
}

std::vector<Record> read_all(const BatchHeader& h, const std::vector<std::uint8_t>& bytes,
                             std::string* fault = nullptr)
{
    RecordReader reader(h, bytes.data(), bytes.size());
    std::vector<Record> records;
    Record record;
    while (reader.next(record))
        records.push_back(record);
    if (fault)
        *fault = reader.fault() ? reader.fault() : "";
    CHECK(reader.decoded() == records.size());
    return records;
}

} // namespace

TEST_CASE("records decode in order, with their times, ids and lines")
{
    std::vector<std::uint8_t> bytes;
    put_record(bytes, 0, 0, 7);                   // call at tsc 1000
    put_record(bytes, 3, 200, 7, 12);             // line 12 at tsc 1200
    put_record(bytes, 4, 100, 0x99'0000'0005ULL); // far call at tsc 1300
    put_record(bytes, 2, 1700, 9);                // near: the batch's id_high goes above it
    const BatchHeader h = header(4);
    std::string fault;
    const std::vector<Record> records = read_all(h, bytes, &fault);
    CHECK(fault.empty());
    CHECK(check_records(h, bytes.data(), bytes.size()).empty());
    REQUIRE(records.size() == 4);
    CHECK(records[0].kind == RecordKind::call);
    CHECK(records[0].id == 0x2a'0000'0007ULL);
    CHECK(records[0].value == 5000);
    CHECK(records[1].kind == RecordKind::line);
    CHECK(records[1].line == 12);
    CHECK(records[1].value == 5100);
    CHECK(records[2].kind == RecordKind::call);
    CHECK(records[2].id == 0x99'0000'0005ULL); // far: as written
    CHECK(records[2].value == 5150);
    CHECK(records[3].kind == RecordKind::ret_unwind);
    CHECK(records[3].id == 0x2a'0000'0009ULL);
    CHECK(records[3].value == 6000); // tsc 3000: the batch's end
}

TEST_CASE("the hook's records read back as it wrote them")
{
    // header(): id_high 0x2a, 2 ticks per ns from tsc 1000 at 5000 ns to tsc 3000.
    struct Written {
        encoding::Kind kind;
        std::uint64_t advance;
        std::uint64_t id;
        std::uint32_t line;
        RecordKind read_as;
        std::uint64_t ns;
    };
    const Written written[] = {
        {encoding::k_call, 0, 0x2a'0000'0001ULL, 0, RecordKind::call, 5000},
        {encoding::k_line, 2, 0x2a'ffff'ffffULL, 0xffff'ffffu, RecordKind::line, 5001},
        {encoding::k_call, 127, 0x2b'0000'0001ULL, 0, RecordKind::call, 5064}, // far id
        {encoding::k_line, 128, 0xffff'ffff'ffff'ffffULL, 1, RecordKind::line, 5128},
        {encoding::k_unwind, 1, 0x2a'0000'0002ULL, 0, RecordKind::ret_unwind, 5129},
        {encoding::k_return, 1742, 0x2a'0000'0001ULL, 0, RecordKind::ret, 6000},
        {encoding::k_return, 1ULL << 60, 0, 0, RecordKind::ret, 6000}, // a long pause, id 0
    };
    std::vector<std::uint8_t> bytes;
    for (const Written& w : written)
        hook_record(bytes, w.kind, w.advance, w.id, 0x2a, w.line);
    const BatchHeader h = header(sizeof written / sizeof written[0]);
    CHECK(check_records(h, bytes.data(), bytes.size()).empty());
    const std::vector<Record> records = read_all(h, bytes);
    REQUIRE(records.size() == sizeof written / sizeof written[0]);
    for (std::size_t i = 0; i < records.size(); ++i) {
        CAPTURE(i);
        CHECK(records[i].kind == written[i].read_as);
        CHECK(records[i].id == written[i].id);
        CHECK(records[i].line == written[i].line);
        CHECK(records[i].value == written[i].ns);
    }
}

namespace {

// The edges of a varint's widths up to max: 0, then for each width n the largest value it takes
// (2^7n - 1) and the smallest of the next (2^7n), then max.
std::vector<std::uint64_t> width_edges(std::uint64_t max)
{
    std::vector<std::uint64_t> values{0};
    for (unsigned bits = 7; bits < 64 && (std::uint64_t{1} << bits) <= max; bits += 7) {
        values.push_back((std::uint64_t{1} << bits) - 1);
        values.push_back(std::uint64_t{1} << bits);
    }
    values.push_back(max);
    return values;
}

// One record of the hook's, alone in a batch whose record clock is LTTng's (tsc == ns, from 0),
// so that its time is its advance.
struct OneRecord {
    encoding::Kind kind;
    std::uint64_t advance;
    std::uint64_t id;
    std::uint32_t line;
};

BatchHeader identity_clock(std::uint32_t id_high)
{
    BatchHeader h;
    h.count = 1;
    h.id_high = id_high;
    h.end_tsc = h.end_ns = ~std::uint64_t{0};
    return h;
}

// Writes r with the hook's writer, checks its bytes' count against the layout's widths, reads it
// back with the plugin's reader, and checks that every cut of it is refused.
void round_trip(const OneRecord& r, std::uint32_t id_high)
{
    CAPTURE(r.kind);
    CAPTURE(r.advance);
    CAPTURE(r.id);
    CAPTURE(r.line);
    std::vector<std::uint8_t> bytes;
    hook_record(bytes, r.kind, r.advance, r.id, id_high, r.line);
    const bool is_far = (r.id >> 32) != id_high;
    const std::uint64_t head =
        r.advance << encoding::k_advance_shift | r.kind | (is_far ? encoding::k_far : 0);
    CHECK(bytes.size() == encoding::varint_width(head) +
                              encoding::varint_width(is_far ? r.id : r.id & 0xffffffffu) +
                              (r.kind == encoding::k_line ? encoding::varint_width(r.line) : 0));
    CHECK(bytes.size() <= encoding::k_max_record);

    const BatchHeader h = identity_clock(id_high);
    CHECK(check_records(h, bytes.data(), bytes.size()).empty());
    std::string fault;
    const std::vector<Record> records = read_all(h, bytes, &fault);
    CHECK(fault.empty());
    REQUIRE(records.size() == 1);
    CHECK(records[0].kind == static_cast<RecordKind>(r.kind));
    CHECK(records[0].id == r.id);
    CHECK(records[0].line == r.line);
    CHECK(records[0].value == r.advance);

    // A batch cut anywhere inside its record: the reader stops at the cut and says so.
    for (std::size_t size = 1; size < bytes.size(); ++size) {
        CAPTURE(size);
        const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + size);
        CHECK(read_all(h, cut, &fault).empty());
        CHECK(fault == "truncated record");
        CHECK(check_records(h, cut.data(), cut.size()) == "truncated record at index 0");
    }
    CHECK(check_records(h, bytes.data(), 0) == "count mismatch: count=1, records=0");
}

} // namespace

TEST_CASE("every kind reads back exactly at the edges of each field's widths")
{
    const std::uint32_t id_high = 0x2a;
    const encoding::Kind kinds[] = {encoding::k_call, encoding::k_return, encoding::k_unwind,
                                    encoding::k_line};
    // A line record's line is 7 here; lines get their own subcase.
    SUBCASE("advances, up to the largest a head takes")
    {
        for (const encoding::Kind kind : kinds)
            for (const std::uint64_t advance : width_edges(encoding::k_max_advance))
                round_trip({kind, advance, encoding::near_id(id_high, 5),
                            encoding::has_line(kind) ? 7u : 0u},
                           id_high);
    }
    SUBCASE("near ids: the low half, up to 2^32 - 1")
    {
        for (const encoding::Kind kind : kinds)
            for (const std::uint64_t low : width_edges(encoding::k_max_near_id))
                round_trip(
                    {kind, 3, encoding::near_id(id_high, low), encoding::has_line(kind) ? 7u : 0u},
                    id_high);
    }
    SUBCASE("far ids: all 64 bits, up to 2^64 - 1")
    {
        for (const encoding::Kind kind : kinds)
            for (const std::uint64_t id : width_edges(~std::uint64_t{0})) {
                REQUIRE((id >> 32) != id_high); // none of the edges has 0x2a above: all far
                if (kind == encoding::k_line &&
                    (id == encoding::k_task_step_id || id == encoding::k_task_end_id ||
                     id == encoding::k_task_id))
                    continue; // a task, a task step or end: their own test cases
                round_trip({kind, 3, id, encoding::has_line(kind) ? 7u : 0u}, id_high);
            }
    }
    SUBCASE("line numbers, up to 2^32 - 1")
    {
        for (const std::uint64_t line : width_edges(encoding::k_max_line))
            round_trip({encoding::k_line, 3, encoding::near_id(id_high, 5),
                        static_cast<std::uint32_t>(line)},
                       id_high);
    }
    SUBCASE("the longest record is a task step of k_max_record bytes, then a line record")
    {
        std::vector<std::uint8_t> bytes;
        hook_record(bytes, encoding::k_line, encoding::k_max_advance, encoding::k_task_step_id,
                    id_high, 0);
        bytes.pop_back(); // its fields instead of the line
        for (const std::uint64_t field :
             {~std::uint64_t{0}, std::uint64_t{0xffffffffu}, encoding::k_max_awaited,
              ~std::uint64_t{0}, encoding::k_max_thrown})
            put_varint(bytes, field);
        CHECK(bytes.size() == encoding::k_max_record);
        bytes.clear();
        hook_record(bytes, encoding::k_line, encoding::k_max_advance, ~std::uint64_t{0}, id_high,
                    0xffffffffu);
        CHECK(bytes.size() == 25);
        round_trip({encoding::k_line, encoding::k_max_advance, ~std::uint64_t{0}, 0xffffffffu},
                   id_high);
    }
}

namespace {

// A task, a task step or end as the hook writes it (a far line record of code id, then fields,
// then a task's name's bytes) between two calls, in one batch: checks that the three read back,
// the calls as written, and that the batch cut inside the task record is refused. Returns the
// task record read; its name points into bytes.
Record task_record_between_calls(std::uint64_t id, std::initializer_list<std::uint64_t> fields,
                                 std::vector<std::uint8_t>& bytes, const std::string& name = {})
{
    const std::uint32_t id_high = 0x2a;
    bytes.clear();
    hook_record(bytes, encoding::k_call, 1, encoding::near_id(id_high, 5), id_high);
    const std::size_t begin = bytes.size();
    std::uint8_t record[encoding::k_max_task_record];
    std::uint8_t* end = encoding::put_record(record, encoding::k_line, 2, id, id_high);
    for (const std::uint64_t field : fields)
        end = encoding::put_varint(end, field);
    end = std::copy(name.begin(), name.end(), end);
    CHECK(end - record <=
          (id == encoding::k_task_id ? encoding::k_max_task_record : encoding::k_max_record));
    bytes.insert(bytes.end(), record, end);
    hook_record(bytes, encoding::k_call, 3, encoding::near_id(id_high, 6), id_high);

    BatchHeader h = identity_clock(id_high);
    h.count = 3;
    CHECK(check_records(h, bytes.data(), bytes.size()).empty());
    const std::vector<Record> records = read_all(h, bytes);
    REQUIRE(records.size() == 3);
    CHECK(records[0].kind == RecordKind::call);
    CHECK(records[0].id == encoding::near_id(id_high, 5));
    CHECK(records[1].id == id);
    CHECK(records[1].value == 3);
    CHECK(records[2].kind == RecordKind::call);
    CHECK(records[2].task == 0);
    CHECK(records[2].id == encoding::near_id(id_high, 6));
    h.count = 2;
    for (std::size_t size = begin + 1; size < begin + (end - record); ++size) {
        CAPTURE(size);
        CHECK(check_records(h, bytes.data(), size) == "truncated record at index 1");
    }
    return records[1];
}

} // namespace

TEST_CASE("a task step reads back between the records around it, at every key's width")
{
    for (const std::uint64_t key : width_edges(~std::uint64_t{0})) {
        CAPTURE(key);
        // The key, resumed, awaited, awaited_id and thrown after code id 0.
        const std::uint8_t thrown = key % (encoding::k_max_thrown + 1);
        std::vector<std::uint8_t> bytes;
        const Record step = task_record_between_calls(
            encoding::k_task_step_id, {key, 0xffffffffu, encoding::k_max_awaited, ~key, thrown},
            bytes);
        CHECK(step.kind == RecordKind::task_step);
        CHECK(step.task == key);
        CHECK(step.resumed == 0xffffffffu);
        CHECK(step.awaited == encoding::k_max_awaited);
        CHECK(step.awaited_id == ~key);
        CHECK(step.thrown == thrown);
    }
}

TEST_CASE("a task end reads back between the records around it, at every key's width")
{
    for (const std::uint64_t key : width_edges(~std::uint64_t{0})) {
        CAPTURE(key);
        // The key and the state after code id 1.
        const std::uint8_t state = key % (encoding::k_max_state + 1);
        std::vector<std::uint8_t> bytes;
        const Record end = task_record_between_calls(encoding::k_task_end_id, {key, state}, bytes);
        CHECK(end.kind == RecordKind::task_end);
        CHECK(end.task == key);
        CHECK(end.state == state);
    }
}

TEST_CASE("a task reads back between the records around it, at every key's width and name's")
{
    const std::string longest(encoding::k_max_task_name, 'n');
    for (const std::uint64_t key : width_edges(~std::uint64_t{0})) {
        for (const std::string& name : {std::string(), std::string("Task-1"),
                                        std::string("t\xc3\xa2"
                                                    "che"),
                                        longest}) {
            CAPTURE(key);
            CAPTURE(name);
            // The key, the parent and the name's size after code id 2, then the name.
            std::vector<std::uint8_t> bytes;
            const Record task = task_record_between_calls(encoding::k_task_id,
                                                          {key, ~key, name.size()}, bytes, name);
            CHECK(task.kind == RecordKind::task);
            CHECK(task.task == key);
            CHECK(task.parent == ~key);
            CHECK(std::string(task.name, task.name_size) == name);
        }
    }
    // The longest: the largest advance and keys, the longest name.
    std::uint8_t record[encoding::k_max_task_record];
    std::uint8_t* end = encoding::put_record(record, encoding::k_line, encoding::k_max_advance,
                                             encoding::k_task_id, 0x2a);
    for (const std::uint64_t field : {~std::uint64_t{0}, ~std::uint64_t{0}, longest.size()})
        end = encoding::put_varint(end, field);
    end = std::copy(longest.begin(), longest.end(), end);
    CHECK(end - record == encoding::k_max_task_record);
}

TEST_CASE("record times stay within the batch's two readings")
{
    BatchHeader h = header(0);
    CHECK(record_ns(h, 500) == 5000);   // before begin_tsc
    CHECK(record_ns(h, 2000) == 5500);  // halfway
    CHECK(record_ns(h, 90000) == 6000); // past end_tsc
    h.end_tsc = h.begin_tsc;            // one reading: every record at begin_ns
    CHECK(record_ns(h, 2000) == 5000);
}

TEST_CASE("a damaged batch says what is wrong, and where")
{
    std::vector<std::uint8_t> good;
    put_record(good, 0, 1, 7);
    put_record(good, 1, 1, 7);

    SUBCASE("count mismatch")
    {
        CHECK(check_records(header(3), good.data(), good.size()) ==
              "count mismatch: count=3, records=2");
    }
    SUBCASE("truncated varint")
    {
        std::vector<std::uint8_t> bytes = good;
        bytes.push_back(0x80); // a varint that never ends
        std::string fault;
        CHECK(read_all(header(3), bytes, &fault).size() == 2);
        CHECK(fault == "truncated record");
        CHECK(check_records(header(3), bytes.data(), bytes.size()) ==
              "truncated record at index 2");
    }
    SUBCASE("a line record without its line")
    {
        std::vector<std::uint8_t> bytes;
        put_varint(bytes, 3 | 1 << 3);
        put_varint(bytes, 7);
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "truncated record at index 0");
    }
    SUBCASE("a near id over 32 bits")
    {
        std::vector<std::uint8_t> bytes;
        put_record(bytes, 0, 1, 0x1'0000'0000ULL);
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "a near id exceeds 32 bits at index 0");
    }
    SUBCASE("a line number over 32 bits")
    {
        std::vector<std::uint8_t> bytes;
        put_record(bytes, 3, 1, 7, 0x1'0000'0000ULL);
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "a line number exceeds 32 bits at index 0");
    }
    SUBCASE("a task step's awaited out of range")
    {
        std::vector<std::uint8_t> bytes;
        put_record(bytes, 3 | 4, 1, 0, 7); // far line record of id 0; 7: its key
        put_varint(bytes, 1);              // resumed
        put_varint(bytes, 5);              // awaited: at most 4
        put_varint(bytes, 0);              // awaited_id
        put_varint(bytes, 0);              // thrown
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "a task step's resumed, awaited or thrown is out of range at index 0");
    }
    SUBCASE("a task step's thrown out of range")
    {
        std::vector<std::uint8_t> bytes;
        put_record(bytes, 3 | 4, 1, 0, 7); // far line record of id 0; 7: its key
        put_varint(bytes, 1);              // resumed
        put_varint(bytes, 2);              // awaited
        put_varint(bytes, 0);              // awaited_id
        put_varint(bytes, 3);              // thrown: at most 2
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "a task step's resumed, awaited or thrown is out of range at index 0");
    }
    SUBCASE("a task end's state out of range")
    {
        std::vector<std::uint8_t> bytes;
        put_record(bytes, 3 | 4, 1, 1, 7); // far line record of id 1; 7: its key
        put_varint(bytes, 3);              // state: at most 2
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "a task end's state is out of range at index 0");
    }
    SUBCASE("a task's name over k_max_task_name bytes")
    {
        std::vector<std::uint8_t> bytes;
        put_record(bytes, 3 | 4, 1, 2, 7); // far line record of id 2; 7: its key
        put_varint(bytes, 0);              // parent
        put_varint(bytes, encoding::k_max_task_name + 1);
        bytes.insert(bytes.end(), encoding::k_max_task_name + 1, 'n');
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "a task's name is longer than a record's at index 0");
    }
    SUBCASE("a varint over 64 bits")
    {
        std::vector<std::uint8_t> bytes(9, 0xff);
        bytes.push_back(0x02);
        CHECK(check_records(header(1), bytes.data(), bytes.size()) ==
              "a varint exceeds 64 bits at index 0");
    }
    SUBCASE("the record clock overflows")
    {
        BatchHeader h = header(5);
        h.begin_tsc = 1ULL << 63;
        h.end_tsc = ~0ULL;
        std::vector<std::uint8_t> bytes;
        for (int i = 0; i < 5; ++i) // the fifth advance of 2^61 - 1 passes 2^64
            put_record(bytes, 0, (~0ULL) >> 3, 7);
        CHECK(check_records(h, bytes.data(), bytes.size()) ==
              "the record clock overflows at index 4");
    }
    SUBCASE("time going backwards")
    {
        BatchHeader h = header(2);
        h.end_ns = h.begin_ns - 1;
        std::string fault;
        CHECK(read_all(h, good, &fault).empty());
        CHECK(check_records(h, good.data(), good.size()) ==
              "time goes backwards (end_ns < begin_ns or end_tsc < begin_tsc)");
    }
}
