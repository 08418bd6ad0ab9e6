// Unit tests of the report writers: number formats, the folded output's sums, escaping, and the
// account of incomplete parts.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "reports.hpp"
#include "stack_model.hpp"

using namespace pyust::analysis;

namespace {

constexpr std::uint64_t outer_id = 0x0000000700000001ULL;
constexpr std::uint64_t inner_id = 0x0000000700000002ULL;
constexpr ThreadKey key{7, 7};

// outer [0, 100] calls inner [10, 13] and inner [50, 90].
StackModel two_calls()
{
    StackModel model;
    model.on_code(outer_id, "m", "outer", "m.py", 1);
    model.on_code(inner_id, "m", "in<ner>", "m.py", 5);
    model.on_call(model.thread_at(key, 0, 0), outer_id);
    model.on_call(model.thread_at(key, 10, 0), inner_id);
    model.on_return(model.thread_at(key, 13, 0), inner_id);
    model.on_call(model.thread_at(key, 50, 0), inner_id);
    model.on_return(model.thread_at(key, 90, 0), inner_id);
    model.on_return(model.thread_at(key, 100, 0), outer_id);
    model.finish();
    return model;
}

} // namespace

TEST_CASE("durations and times read as people expect")
{
    CHECK(format_duration(999) == "999 ns");
    CHECK(format_duration(1500) == "1.500 us");
    CHECK(format_duration(2500000) == "2.500 ms");
    CHECK(format_duration(3200000000) == "3.200 s");
    CHECK(format_time(1500000001) == "1.500000001");
    CHECK(format_time(-5) == "-0.000000005");
}

TEST_CASE("folded stacks hold self times; a cut path gives its time to its parent")
{
    const StackModel model = two_calls();
    std::ostringstream all;
    write_folded(model, all, 0);
    CHECK(all.str() == "m:outer 57\nm:outer;m:in<ner> 43\n");
    // Both inner calls share one call path of 43 ns in total: a 50 ns minimum cuts it.
    std::ostringstream cut;
    write_folded(model, cut, 50);
    CHECK(cut.str() == "m:outer 100\n");
}

TEST_CASE("the SVG escapes labels and the JSON stays valid text")
{
    const StackModel model = two_calls();
    std::ostringstream svg;
    write_svg(model, svg, 0, "t & t");
    CHECK(svg.str().find("data-l=\"m:in&lt;ner&gt;\"") != std::string::npos);
    CHECK(svg.str().find("t &amp; t") != std::string::npos);
    CHECK(svg.str().find("in<ner>") == std::string::npos);
}

TEST_CASE("incomplete parts are listed per thread with their times")
{
    StackModel model;
    model.on_return(model.thread_at(key, 5, 3), outer_id);
    model.on_call(model.thread_at(key, 6, 3), inner_id);
    model.on_discarded(3, 7, 8, 2);
    model.finish();
    std::ostringstream out;
    write_gaps(model, out, [](std::uint64_t) { return std::string("cpu0"); });
    CHECK(out.str() ==
          "\nIncomplete:\n"
          "  pid 7 tid 7: returns without a call (trace started mid-call) (1), from "
          "0.000000005 to 0.000000005\n"
          "  pid 7 tid 7: events discarded by the tracer (2), from 0.000000007 to "
          "0.000000008\n"
          "  pid 7 tid 7: frames still open at the end, closed at the last event (1), from "
          "0.000000006 to 0.000000006\n"
          "  stream cpu0: events discarded by the tracer (2), from 0.000000007 to "
          "0.000000008\n");
}

TEST_CASE("a start the trace lacks comes first, with its process and length")
{
    StackModel model = two_calls();
    model.on_lost_start(7, 2000000000, 1500000000);
    ReportOptions options;
    options.processes[7] = "python3 app.py";
    std::ostringstream out;
    write_gaps(
        model, out, [](std::uint64_t) { return std::string("cpu0"); }, options);
    CHECK(out.str() == "\nIncomplete:\n"
                       "  pid 7 (python3 app.py): start not recorded (the session recorded the "
                       "process late): its first 1.500 s, from 0.500000000 to 2.000000000\n");
}

TEST_CASE("processes are titled by their command lines, program by its base name")
{
    StackModel model = two_calls();
    model.finish();
    ReportOptions options;
    name_processes(model, {{7, "/usr/bin/python3 app.py 'two words'"}}, {{7, "python3"}}, {},
                   options);
    CHECK(process_title(options, 7) == "pid 7 (python3 app.py 'two words')");
    // Without a command line (older traces): the command name.
    ReportOptions old;
    name_processes(model, {}, {{7, "python3"}}, {}, old);
    CHECK(process_title(old, 7) == "pid 7 (python3)");
}

TEST_CASE("a title is valid UTF-8 whatever the trace holds")
{
    StackModel model = two_calls();
    model.finish();
    ReportOptions options;
    // Overlong forms, a surrogate, past U+10FFFF, a stray continuation byte; then valid é, €.
    name_processes(
        model,
        {{7, "p \xe0\x9c\x97 \xc1\x81 \xed\xa0\x80 \xf4\x90\x80\x80 \x80 \xc3\xa9\xe2\x82\xac"}},
        {}, {}, options);
    CHECK(process_title(options, 7) == "pid 7 (p \\xe0\\x9c\\x97 \\xc1\\x81 \\xed\\xa0\\x80 "
                                       "\\xf4\\x90\\x80\\x80 \\x80 \xc3\xa9\xe2\x82\xac)");
    // A command line longer than a title holds is cut, never inside a character.
    name_processes(model, {{7, "python3 " + std::string(151, 'x') + "\xc3\xa9\xc3\xa9"}}, {}, {},
                   options);
    CHECK(process_title(options, 7) == "pid 7 (python3 " + std::string(151, 'x') + "...)");
}
