// Unit tests of the report writers: number formats, the folded output's sums, escaping, and the
// account of incomplete parts.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "analysis/reports.hpp"
#include "analysis/stack_model.hpp"

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

TEST_CASE("a title keeps its ';' and writes a line feed \\n: one line, as typed")
{
    StackModel model = two_calls();
    model.finish();
    ReportOptions options;
    name_processes(model, {{7, "/usr/bin/python3 -c 'import sys; f()\n\tg()' a"}}, {}, {}, options);
    CHECK(process_title(options, 7) == "pid 7 (python3 -c 'import sys; f()\\n\\tg()' a)");
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

namespace {

// One thread whose code 1 calls itself, depth frames deep; each frame 10 ns of self time.
StackModel recursion(int depth)
{
    StackModel model;
    model.on_code(outer_id, "m", "f", "m.py", 1);
    for (int i = 0; i < depth; ++i)
        model.on_call(model.thread_at(key, 10 * i, 0), outer_id);
    for (int i = depth; i > 0; --i)
        model.on_return(model.thread_at(key, 10 * depth + 10 * (depth - i + 1), 0), outer_id);
    model.finish();
    return model;
}

std::size_t count(const std::string& text, const std::string& what)
{
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

} // namespace

TEST_CASE("a recursion deeper than max_depth: one line, stack or box holds what was cut")
{
    const StackModel model = recursion(50);
    ReportOptions options;
    options.max_depth = 10;
    std::ostringstream tree;
    const Cuts tree_cuts = write_tree(model, tree, 0, options);
    CHECK(tree_cuts.deep_paths == 40);
    CHECK(count(tree.str(), "m:f  (") == 10);
    CHECK(tree.str().find("\n" + std::string(22, ' ') + "800 ns  [... 40 frames cut]\n") !=
          std::string::npos);
    CHECK(tree.str().find("40 call paths deeper than 10 frames cut") != std::string::npos);
    // Folded: the stacks keep their sum (the traced time), the cut frame holds the rest.
    std::ostringstream cut;
    const Cuts folded_cuts = write_folded(model, cut, 0, options);
    CHECK(folded_cuts.deep_paths == 40);
    CHECK(count(cut.str(), "\n") == 11);
    CHECK(cut.str().find(";m:f;[... 40 frames cut] 800\n") != std::string::npos);
    CHECK(cut_note(folded_cuts, options) == "40 call paths deeper than 10 frames cut, each group "
                                            "as one [... N frames cut] (--max-depth 0 shows "
                                            "them all)");
    std::ostringstream svg;
    CHECK(write_svg(model, svg, 0, "t", options).deep_paths == 40);
    CHECK(count(svg.str(), "data-l=\"m:f\"") == 10);
    CHECK(count(svg.str(), "data-l=\"[... 40 frames cut]\"") == 1);
    // Without a limit, nothing is cut.
    std::ostringstream whole;
    CHECK(!write_tree(model, whole, 0).is_cut());
    CHECK(count(whole.str(), "m:f  (") == 50);
}

TEST_CASE("max_bytes bounds every writer's output, and the text ones say so in a last line")
{
    const StackModel model = recursion(200);
    ReportOptions options;
    options.max_bytes = 2000;
    std::ostringstream tree;
    const Cuts cuts = write_tree(model, tree, 0, options);
    CHECK(cuts.bytes == tree.str().size());
    CHECK(cuts.bytes <= 2000 + 200); // the lines, then the notes
    CHECK(cuts.lines == 200 - count(tree.str(), "m:f  ("));
    CHECK(tree.str().find("... the output reached 0.002 MB: " + std::to_string(cuts.lines) +
                          " more lines not shown: --max-size 0 shows them all\n") !=
          std::string::npos);
    std::ostringstream folded;
    const Cuts stacks = write_folded(model, folded, 0, options);
    CHECK(folded.str().size() <= 2000);
    CHECK(stacks.lines + count(folded.str(), "\n") == 200);
    CHECK(cut_note(stacks, options) ==
          "the output reached 0.002 MB: " + std::to_string(stacks.lines) +
              " more stacks left out (--max-size 0 writes them all)");
    options.max_bytes = 6000;
    std::ostringstream svg;
    const Cuts boxes = write_svg(model, svg, 0, "t", options);
    CHECK(boxes.lines > 0);
    CHECK(svg.str().size() < 6000 + 5000); // the boxes, then the script and the end
    CHECK(svg.str().substr(svg.str().size() - 7) == "</svg>\n");
    std::ostringstream profile;
    options.max_bytes = 100;
    CHECK(write_profile(model, profile, options).lines > 0);
    CHECK(profile.str().size() <= 100 + 200);
}

namespace {

// An event loop's Handle._run [0, 1000] steps main's task (created at 0, outside tasks), which
// creates a worker's task at 500; Handle._run [2000, 2100] steps the worker, which awaits a
// sleep; Handle._run [5000, 5100] resumes both frames until they return.
void feed_loop(StackModel& model)
{
    constexpr std::uint64_t run_id = 0x0000000700000011ULL, main_id = 0x0000000700000012ULL,
                            worker_id = 0x0000000700000013ULL, sleep_id = 0x0000000700000014ULL;
    model.on_code(run_id, "asyncio.events", "Handle._run", "events.py", 78);
    model.on_code(main_id, "app", "main", "app.py", 1);
    model.on_code(worker_id, "app", "worker", "app.py", 5);
    model.on_code(sleep_id, "asyncio.tasks", "sleep", "tasks.py", 627);
    const auto at = [&](Timestamp ts) -> Thread& { return model.thread_at(key, ts, 0); };
    model.on_task(at(0), 0xa, 0, "Task-1");
    model.on_call(at(0), run_id);
    model.on_task_step(at(10), 0xa, 0, 0, 0);
    model.on_call(at(10), main_id);
    model.on_task(at(500), 0xb, 0xa, "worker");
    model.on_return(at(900), main_id);
    model.on_task_end(at(900), 0xa, 0);
    model.on_return(at(1000), run_id);
    for (const Timestamp begin : {2000, 5000}) {
        model.on_call(at(begin), run_id);
        model.on_task_step(at(begin), 0xb, begin == 2000 ? 0 : 2, begin == 2000 ? 0 : 2, 0);
        model.on_call(at(begin + 10), worker_id);
        model.on_call(at(begin + 20), sleep_id);
        model.on_return(at(begin + 80), sleep_id);
        model.on_return(at(begin + 90), worker_id);
        if (begin == 5000)
            model.on_task_end(at(begin + 90), 0xb, 0);
        model.on_return(at(begin + 100), run_id);
    }
    model.finish();
}

} // namespace

TEST_CASE("the tasks format: a table, each task's figures and tree, then the frames outside")
{
    StackModel model;
    feed_loop(model);
    std::ostringstream out;
    write_tasks(model, out, 0);
    CHECK(out.str() ==
          "pid 7 tid 7: 2 asyncio tasks, running 1.070 us; 150 ns in frames outside them\n"
          "         wall    to start     running    awaiting   steps  end        task\n"
          "       900 ns       10 ns      890 ns        0 ns       1  returned   Task-1\n"
          "     4.590 us    1.500 us      180 ns    2.910 us       2  returned     worker\n"
          "\n"
          "task Task-1: created outside tasks\n"
          "  wall          900 ns  from its creation to its end: returned\n"
          "  to start       10 ns  before its first step\n"
          "  running       890 ns  in 1 step\n"
          "  awaiting        0 ns  nothing\n"
          "    890 ns  app:main  (1 call, self 890 ns)\n"
          "\n"
          "task worker: created by Task-1 in app:main\n"
          "  wall        4.590 us  from its creation to its end: returned\n"
          "  to start    1.500 us  before its first step\n"
          "  running       180 ns  in 2 steps\n"
          "  awaiting    2.910 us  sleep 2.910 us (1)\n"
          "    160 ns  app:worker  (1 call, self 40 ns)\n"
          "      120 ns  asyncio.tasks:sleep  (1 call, self 120 ns)\n"
          "\n"
          "outside tasks: 150 ns in frames\n"
          "    150 ns  asyncio.events:Handle._run  (3 calls, self 150 ns)\n");
}

TEST_CASE("tasks: frames under the task that created them, where it did; the same total")
{
    StackModel model;
    feed_loop(model);
    std::ostringstream plain;
    write_folded(model, plain, 0);
    CHECK(plain.str() == "asyncio.events:Handle._run 150\n"
                         "asyncio.events:Handle._run;app:main 890\n"
                         "asyncio.events:Handle._run;app:worker 40\n"
                         "asyncio.events:Handle._run;app:worker;asyncio.tasks:sleep 120\n");
    ReportOptions options;
    options.tasks = true;
    std::ostringstream chains;
    write_folded(model, chains, 0, options);
    CHECK(chains.str() == "app:main 890\n"
                          "app:main;app:worker 40\n"
                          "app:main;app:worker;asyncio.tasks:sleep 120\n"
                          "asyncio.events:Handle._run 150\n");
}

TEST_CASE("chrome: a lane per task, named by it, with its awaits between its steps")
{
    StackModel model;
    std::ostringstream out;
    ChromeWriter chrome(model, out, 0);
    model.set_listener(&chrome);
    feed_loop(model);
    chrome.finish([](std::uint64_t) { return std::string("s"); });
    const std::string json = out.str();
    const std::string worker_lane = std::to_string(ChromeWriter::task_lane_base + 1);
    for (const std::string& event : std::vector<std::string>{
             "{\"name\":\"app:main\",\"cat\":\"python\",\"ph\":\"X\",\"ts\":0.010,\"dur\":0.890,"
             "\"pid\":7,\"tid\":" +
                 std::to_string(ChromeWriter::task_lane_base) + "}",
             "{\"name\":\"app:worker\",\"cat\":\"python\",\"ph\":\"X\",\"ts\":5.010,\"dur\":0.080,"
             "\"pid\":7,\"tid\":" +
                 worker_lane + "}",
             "{\"name\":\"await sleep\",\"cat\":\"await\",\"ph\":\"X\",\"ts\":2.090,\"dur\":2.910,"
             "\"pid\":7,\"tid\":" +
                 worker_lane + "}",
             "{\"name\":\"asyncio.events:Handle._run\",\"cat\":\"python\",\"ph\":\"X\",\"ts\":2."
             "000,"
             "\"dur\":0.100,\"pid\":7,\"tid\":7}",
             "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":7,\"tid\":" + worker_lane +
                 ",\"args\":{\"name\":\"worker\"}}",
         })
        CHECK_MESSAGE(json.find(event) != std::string::npos, event);
    // The thread's lane holds the loop only.
    CHECK(json.find("\"app:worker\",\"cat\":\"python\",\"ph\":\"X\",\"ts\":2.010,\"dur\":0.080,"
                    "\"pid\":7,\"tid\":7") == std::string::npos);
}

TEST_CASE("a node where a coroutine only resumed keeps its time, and reads resumed")
{
    // An eager task's first step runs inside create_task; its next step resumes the same
    // frame under the loop's Handle._run, where it returns: its call counts there.
    constexpr std::uint64_t create_id = 0x0000000700000021ULL, run_id = 0x0000000700000022ULL,
                            child_id = 0x0000000700000023ULL;
    StackModel model;
    model.on_code(create_id, "asyncio.base_events", "BaseEventLoop.create_task", "b.py", 1);
    model.on_code(run_id, "asyncio.events", "Handle._run", "events.py", 78);
    model.on_code(child_id, "app", "child", "app.py", 1);
    const auto at = [&](Timestamp ts) -> Thread& { return model.thread_at(key, ts, 0); };
    model.on_call(at(0), create_id);
    model.on_task_step(at(10), 0xc, 0, 0, 0);
    model.on_call(at(10), child_id);
    model.on_return(at(30), child_id);
    model.on_return(at(40), create_id);
    model.on_call(at(100), run_id);
    model.on_task_step(at(110), 0xc, 1, 2, 0);
    model.on_call(at(110), child_id);
    model.on_return(at(150), child_id);
    model.on_task_end(at(150), 0xc, 0);
    model.on_return(at(160), run_id);
    model.finish();
    std::ostringstream tree;
    write_tree(model, tree, 0);
    CHECK(tree.str() ==
          "pid 7 tid 7: 11 events, 100 ns in frames\n"
          "  40 ns  asyncio.base_events:BaseEventLoop.create_task  (1 call, self 20 ns)\n"
          "    20 ns  app:child  (resumed, self 20 ns)\n"
          "  60 ns  asyncio.events:Handle._run  (1 call, self 20 ns)\n"
          "    40 ns  app:child  (1 call, self 40 ns)\n");
    std::ostringstream stacks;
    write_folded(model, stacks, 0);
    CHECK(stacks.str() == "asyncio.base_events:BaseEventLoop.create_task 20\n"
                          "asyncio.base_events:BaseEventLoop.create_task;app:child 20\n"
                          "asyncio.events:Handle._run 20\n"
                          "asyncio.events:Handle._run;app:child 40\n");
}
