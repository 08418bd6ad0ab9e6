// Unit tests of the stack-rebuilding core: exact stacks and times for well-formed event
// sequences, and honest gaps (never a negative depth) for imperfect ones.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/stack_model.hpp"

using namespace pyust::analysis;

namespace {

constexpr std::uint64_t main_id = 0x0000006400000001ULL; // pid 100, seq 1
constexpr std::uint64_t foo_id = 0x0000006400000002ULL;
constexpr std::uint64_t bar_id = 0x0000006400000003ULL;
constexpr ThreadKey thread_a{100, 100};
constexpr ThreadKey thread_b{100, 101};

// Feeds events to a model with explicit times, on stream 0 unless told.
struct Feeder {
    StackModel model;

    Feeder()
    {
        model.on_code(main_id, "__main__", "<module>", "app.py", 1);
        model.on_code(foo_id, "__main__", "foo", "app.py", 3);
        model.on_code(bar_id, "pkg.mod", "Bar.run", "/src/pkg/mod.py", 10);
    }
    Thread& at(Timestamp ts, ThreadKey key = thread_a, std::uint64_t stream = 0)
    {
        return model.thread_at(key, ts, stream);
    }
    void call(Timestamp ts, std::uint64_t id, ThreadKey key = thread_a)
    {
        model.on_call(at(ts, key), id);
    }
    void ret(Timestamp ts, std::uint64_t id, ThreadKey key = thread_a)
    {
        model.on_return(at(ts, key), id);
    }
    const Thread& thread(ThreadKey key = thread_a)
    {
        for (const Thread* t : model.threads())
            if (t->key() == key)
                return *t;
        FAIL("no such thread");
        throw;
    }
    // "label calls total self" per node, depth-first, indented by two spaces per level.
    std::vector<std::string> tree(ThreadKey key = thread_a)
    {
        std::vector<std::string> out;
        const Thread& t = thread(key);
        walk(t, 0, 0, out);
        return out;
    }
    void walk(const Thread& t, std::uint32_t index, int level, std::vector<std::string>& out)
    {
        const ContextNode& node = t.nodes()[index];
        if (index != 0)
            out.push_back(std::string(2 * (level - 1), ' ') + model.label(node.id) + ' ' +
                          std::to_string(node.calls) + ' ' + std::to_string(node.total_ns) + ' ' +
                          std::to_string(node.self_ns));
        for (std::uint32_t child : node.children)
            walk(t, child, level + 1, out);
    }
};

std::vector<std::string> stack_labels(const StackModel& model, const Thread& thread)
{
    std::vector<std::string> out;
    for (const Frame& frame : thread.frames())
        out.push_back(model.label(frame.id));
    return out;
}

} // namespace

TEST_CASE("nested calls build the calling context tree with inclusive and self times")
{
    Feeder f;
    f.call(0, main_id);
    f.call(10, foo_id);
    f.call(20, bar_id);
    CHECK(stack_labels(f.model, f.thread()) ==
          std::vector<std::string>{"__main__:<module>", "__main__:foo", "pkg.mod:Bar.run"});
    f.ret(50, bar_id);
    f.ret(60, foo_id);
    f.call(70, bar_id);
    f.ret(80, bar_id);
    f.ret(100, main_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{
                          "__main__:<module> 1 100 40",
                          "  __main__:foo 1 50 20",
                          "    pkg.mod:Bar.run 1 30 30",
                          "  pkg.mod:Bar.run 1 10 10",
                      });
    const auto& functions = f.model.functions();
    CHECK(functions.at(FrameId{bar_id, false}).calls == 2);
    CHECK(functions.at(FrameId{bar_id, false}).total_ns == 40);
    CHECK(functions.at(FrameId{bar_id, false}).self_ns == 40);
    CHECK(f.thread().gaps().empty());
    CHECK(f.thread().depth() == 0);
}

TEST_CASE("recursion counts the inclusive time of the outermost call only")
{
    Feeder f;
    f.call(0, foo_id);
    f.call(10, foo_id);
    f.call(20, foo_id);
    f.ret(30, foo_id);
    f.ret(40, foo_id);
    f.ret(50, foo_id);
    f.model.finish();
    const FunctionStats& stats = f.model.functions().at(FrameId{foo_id, false});
    CHECK(stats.calls == 3);
    CHECK(stats.total_ns == 50);
    CHECK(stats.self_ns == 50);
    CHECK(f.tree().size() == 3);
}

TEST_CASE("a trace that starts mid-call never goes below depth zero and says when")
{
    Feeder f;
    f.call(5, bar_id);
    f.ret(8, bar_id);
    f.ret(10, foo_id);  // foo was running before the trace started
    f.ret(12, main_id); // and so was <module>
    CHECK(f.thread().depth() == 0);
    f.call(20, foo_id);
    f.ret(30, foo_id);
    f.model.finish();
    const auto& gaps = f.thread().gaps();
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0].kind == GapKind::unmatched_return);
    CHECK(gaps[0].begin == 5);
    CHECK(gaps[0].end == 12);
    CHECK(gaps[0].count == 2);
    CHECK(f.tree() == std::vector<std::string>{"pkg.mod:Bar.run 1 3 3", "__main__:foo 1 10 10"});
}

TEST_CASE("frames still open at the end close at the thread's last event")
{
    Feeder f;
    f.call(0, main_id);
    f.call(10, foo_id);
    f.call(15, bar_id, thread_b);
    f.at(40); // some other event of thread a
    f.model.finish();
    CHECK(f.tree() ==
          std::vector<std::string>{"__main__:<module> 1 40 10", "  __main__:foo 1 30 30"});
    REQUIRE(f.thread().gaps().size() == 1);
    CHECK(f.thread().gaps()[0].kind == GapKind::open_at_end);
    CHECK(f.thread().gaps()[0].begin == 0);
    CHECK(f.thread().gaps()[0].end == 40);
    CHECK(f.thread().gaps()[0].count == 2);
    CHECK(f.tree(thread_b) == std::vector<std::string>{"pkg.mod:Bar.run 1 0 0"});
}

TEST_CASE("a return of an outer frame closes the frames above it and records it")
{
    Feeder f;
    f.call(0, main_id);
    f.call(10, foo_id);
    f.call(20, bar_id); // its return is lost
    f.ret(30, foo_id);
    CHECK(f.thread().depth() == 1);
    f.ret(40, main_id);
    f.model.finish();
    REQUIRE(f.thread().gaps().size() == 1);
    CHECK(f.thread().gaps()[0].kind == GapKind::mismatched_return);
    CHECK(f.thread().gaps()[0].begin == 20);
    CHECK(f.thread().gaps()[0].end == 30);
    CHECK(f.thread().gaps()[0].count == 1);
}

TEST_CASE("C calls nest inside Python frames and a stray c_return is a gap")
{
    Feeder f;
    f.model.on_c_return(f.at(1)); // started inside a C call
    f.call(2, foo_id);
    f.model.on_c_call(f.at(3), "len", "builtins");
    CHECK(stack_labels(f.model, f.thread()) ==
          std::vector<std::string>{"__main__:foo", "builtins:len"});
    f.model.on_c_return(f.at(5));
    f.ret(9, foo_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{"__main__:foo 1 7 5", "  builtins:len 1 2 2"});
    REQUIRE(f.thread().gaps().size() == 1);
    CHECK(f.thread().gaps()[0].kind == GapKind::unmatched_return);
}

TEST_CASE("threads interleaved on one stream keep separate stacks")
{
    Feeder f;
    f.call(0, foo_id, thread_a);
    f.call(1, bar_id, thread_b);
    f.call(2, bar_id, thread_a);
    f.ret(3, bar_id, thread_b);
    f.ret(4, bar_id, thread_a);
    f.ret(5, foo_id, thread_a);
    f.model.finish();
    CHECK(f.tree(thread_a) ==
          std::vector<std::string>{"__main__:foo 1 5 3", "  pkg.mod:Bar.run 1 2 2"});
    CHECK(f.tree(thread_b) == std::vector<std::string>{"pkg.mod:Bar.run 1 2 2"});
}

TEST_CASE("lost events mark every thread seen on the stream, and the stream")
{
    Feeder f;
    f.call(0, foo_id, thread_a);
    f.model.thread_at(thread_b, 1, 7);
    f.model.on_discarded(0, 10, 20, 5);
    f.ret(30, foo_id, thread_a);
    f.model.finish();
    REQUIRE(f.thread(thread_a).gaps().size() == 1);
    CHECK(f.thread(thread_a).gaps()[0].kind == GapKind::discarded_events);
    CHECK(f.thread(thread_a).gaps()[0].begin == 10);
    CHECK(f.thread(thread_a).gaps()[0].end == 20);
    CHECK(f.thread(thread_a).gaps()[0].count == 5);
    CHECK(f.thread(thread_b).gaps().empty());
    CHECK(f.model.stream_gaps().at(0).size() == 1);
}

TEST_CASE("unknown ids are named by their value")
{
    Feeder f;
    CHECK(f.model.label(FrameId{0xdeadULL, false}) == "<unknown 0xdead>");
    f.model.on_code(0xdeadULL, "m", "known", "m.py", 1);
    CHECK(f.model.label(FrameId{0xdeadULL, false}) == "m:known");
}

TEST_CASE("an id registered again with other names names only the frames after")
{
    // A program exec'd by a traced one goes on under the same pid and counts its code ids
    // from 1 again: the old program's frames keep their names.
    Feeder f;
    const std::uint64_t id = 0x700000001ULL;
    f.model.on_code(id, "__main__", "old", "old.py", 1);
    f.call(10, id);
    f.ret(20, id);
    f.model.on_code(id, "__main__", "old", "old.py", 1); // a rundown: the same code
    f.call(30, id);
    f.ret(40, id);
    f.model.on_code(id, "__main__", "new", "new.py", 1); // the exec'd program's
    f.call(50, id);
    f.ret(60, id);
    CHECK(f.tree() == std::vector<std::string>{"__main__:old 2 20 20", "__main__:new 1 10 10"});
    CHECK(f.model.code(id)->qualname == "old"); // the trace's id: its first code
}

TEST_CASE("the naming rule: module, file for exec'd code, [co_name] for renamed code")
{
    StackModel model;
    model.on_code(1, "pkg.mod", "Klass.method", "/src/pkg/mod.py", 10, "method");
    model.on_code(2, "?", "root", "templates/page.html", 1, "root");
    model.on_code(3, "numpy.core.overrides", "decorator.<locals>.public_api",
                  "<__array_function__ internals>", 177, "copyto");
    model.on_code(4, "?", "made", "", 1); // an older hook: empty file, no name field
    model.on_code(5, "m", "f.<locals>.<lambda>", "m.py", 3, "<lambda>");
    CHECK(model.label(FrameId{1, false}) == "pkg.mod:Klass.method");
    CHECK(model.label(FrameId{2, false}) == "templates/page.html:root");
    CHECK(model.label(FrameId{3, false}) ==
          "numpy.core.overrides:decorator.<locals>.public_api[copyto]");
    CHECK(model.label(FrameId{4, false}) == "<no file name>:made");
    CHECK(model.label(FrameId{5, false}) == "m:f.<locals>.<lambda>");
    CHECK(model.location(FrameId{1, false}) == "/src/pkg/mod.py:10");
    CHECK(model.location(FrameId{4, false}) == "<no file name>:1");
    CHECK(model.code(4)->is_registered);
}

TEST_CASE("a call's name names code until its python:code comes; registered code stays named")
{
    StackModel model;
    CHECK(model.location(FrameId{9, false}) == "(unregistered)");
    CHECK_FALSE(model.on_call_name(9, ""));
    CHECK_FALSE(model.on_call_name(9, "?")); // filter.pyust.expand's call of an unnamed id
    CHECK(model.label(FrameId{9, false}) == "<unknown 0x9>");
    CHECK(model.on_call_name(9, "fact"));
    CHECK(model.label(FrameId{9, false}) == "?:fact");
    CHECK(model.location(FrameId{9, false}) == "(named by its call)");
    CHECK_FALSE(model.on_call_name(9, "other"));
    model.on_code(9, "?", "fact", "", 20);
    CHECK(model.label(FrameId{9, false}) == "<no file name>:fact");
    CHECK(model.location(FrameId{9, false}) == "<no file name>:20");
    CHECK_FALSE(model.on_call_name(9, "fact"));
    CHECK(model.label(FrameId{9, false}) == "<no file name>:fact");
}

TEST_CASE("lines get hits and the time until the next line of the same frame")
{
    Feeder f;
    f.call(0, foo_id);
    f.model.on_line(f.at(1), foo_id, 4);
    f.call(2, bar_id);
    f.model.on_line(f.at(3), bar_id, 11);
    f.ret(5, bar_id);
    f.model.on_line(f.at(6), foo_id, 5);
    f.model.on_line(f.at(9), foo_id, 4);
    f.ret(10, foo_id);
    f.model.finish();
    const auto& lines = f.model.lines();
    CHECK(lines.at(LineKey{foo_id, 4}).hits == 2);
    CHECK(lines.at(LineKey{foo_id, 4}).total_ns == 5 + 1);
    CHECK(lines.at(LineKey{foo_id, 5}).total_ns == 3);
    CHECK(lines.at(LineKey{bar_id, 11}).total_ns == 2);
}

TEST_CASE("a window clips frame times and drops what lies outside")
{
    Feeder f;
    f.model.set_window(10, 30);
    f.call(0, main_id);
    f.call(2, foo_id);
    f.ret(5, foo_id);
    f.call(20, bar_id);
    f.ret(25, bar_id);
    f.ret(40, main_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{"__main__:<module> 1 20 15", "  __main__:foo 0 0 0",
                                               "  pkg.mod:Bar.run 1 5 5"});
}

TEST_CASE("a time going backwards never makes a negative duration")
{
    Feeder f;
    f.call(10, foo_id);
    f.ret(5, foo_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{"__main__:foo 1 0 0"});
}

TEST_CASE("native frames nest inside Python frames, named by debug-info or their address")
{
    Feeder f;
    f.call(0, main_id);
    f.model.on_native_entry(f.at(10), 0x7f0000001000, "__pyx_pf_4foo2_outer+0", "foo2.so+0x1000");
    f.model.on_native_entry(f.at(20), 0x7f0000002000, "", "foo2.so+0x2000");
    f.model.on_native_entry(f.at(30), 0x7f0000003000, "", "");
    CHECK(stack_labels(f.model, f.thread()) ==
          std::vector<std::string>{"__main__:<module>", "foo2.outer", "foo2.so+0x2000",
                                   "0x7f0000003000"});
    f.model.on_native_exit(f.at(40), 0x7f0000003000, true);
    f.model.on_native_exit(f.at(50), 0x7f0000002000, true);
    f.model.on_c_return(f.at(55)); // a python:c_return never closes a native frame
    f.model.on_native_exit(f.at(60), 0x7f0000001000, true);
    f.ret(70, main_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{"__main__:<module> 1 70 20", "  foo2.outer 1 50 20",
                                               "    foo2.so+0x2000 1 30 20",
                                               "      0x7f0000003000 1 10 10"});
    REQUIRE(f.thread().gaps().size() == 1);
    CHECK(f.thread().gaps()[0].kind == GapKind::unmatched_return);
}

TEST_CASE("lost native exits close at the exit of a caller; lost entries are gaps")
{
    Feeder f;
    f.call(0, main_id);
    f.model.on_native_entry(f.at(10), 0x1000, "outer+0", "");
    f.model.on_native_entry(f.at(20), 0x2000, "helper_c+0", ""); // its exit is lost
    f.model.on_native_exit(f.at(30), 0x1000, true);
    CHECK(f.thread().depth() == 1);
    f.model.on_native_exit(f.at(40), 0x3000, true); // its entry was lost: nothing closes
    CHECK(f.thread().depth() == 1);
    f.model.on_native_entry(f.at(50), 0x2000, "helper_c+0", ""); // exit lost, closed by return
    f.ret(60, main_id);
    CHECK(f.thread().depth() == 0);
    f.model.finish();
    REQUIRE(f.thread().gaps().size() == 2);
    CHECK(f.thread().gaps()[0].kind == GapKind::mismatched_return);
    CHECK(f.thread().gaps()[0].count == 2);
    CHECK(f.thread().gaps()[1].kind == GapKind::unmatched_return);
}

TEST_CASE("Cython's wrapper, implementation and C function of one Python function: one frame")
{
    Feeder f;
    f.call(0, main_id);
    // nat.cy_entry (pw -> pf -> f of a cpdef function) calls nat.cy_inner, which recurses once.
    f.model.on_native_entry(f.at(10), 0x1000, "__pyx_pw_3nat_1cy_entry+0", "nat.so+0x1000");
    f.model.on_native_entry(f.at(11), 0x2000, "__pyx_pf_3nat_cy_entry+0", "nat.so+0x2000");
    f.model.on_native_entry(f.at(12), 0x3000, "__pyx_f_3nat_cy_entry+0", "nat.so+0x3000");
    f.model.on_native_entry(f.at(20), 0x4000, "__pyx_f_3nat_cy_inner.constprop.0+0",
                            "nat.so+0x4000");
    f.model.on_native_entry(f.at(25), 0x4000, "__pyx_f_3nat_cy_inner.constprop.0+0",
                            "nat.so+0x4000");
    CHECK(stack_labels(f.model, f.thread()) ==
          std::vector<std::string>{"__main__:<module>", "nat.cy_entry", "nat.cy_inner",
                                   "nat.cy_inner"});
    f.model.on_native_exit(f.at(30), 0x4000, true);
    f.model.on_native_exit(f.at(40), 0x4000, true);
    f.model.on_native_exit(f.at(50), 0x3000, true);
    f.model.on_native_exit(f.at(51), 0x2000, true);
    CHECK(f.thread().depth() == 2); // the wrapper's frame is still open
    f.model.on_native_exit(f.at(60), 0x1000, true);
    f.ret(70, main_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{"__main__:<module> 1 70 20",
                                               "  nat.cy_entry 1 50 30", "    nat.cy_inner 1 20 15",
                                               "      nat.cy_inner 1 5 5"});
    CHECK(f.thread().gaps().empty());
}

TEST_CASE("a merged call whose exit is lost ends with its frame; raw names merge nothing")
{
    Feeder f;
    f.model.on_native_entry(f.at(10), 0x1000, "__pyx_pw_3nat_1run+0", "nat.so+0x1000");
    f.model.on_native_entry(f.at(11), 0x2000, "__pyx_pf_3nat_run+0", "nat.so+0x2000");
    f.model.on_native_exit(f.at(20), 0x1000, true); // the implementation's exit was lost
    CHECK(f.thread().depth() == 0);

    Feeder raw;
    raw.model.set_raw_native_names(true);
    raw.model.on_native_entry(raw.at(10), 0x1000, "__pyx_pw_3nat_1run+0", "nat.so+0x1000");
    raw.model.on_native_entry(raw.at(11), 0x2000, "__pyx_pf_3nat_run+0", "nat.so+0x2000");
    CHECK(stack_labels(raw.model, raw.thread()) ==
          std::vector<std::string>{"__pyx_pw_3nat_1run", "__pyx_pf_3nat_run"});
}

TEST_CASE("only Cython's functions of one name in one binary are merged")
{
    Feeder f;
    // Namesakes in two binaries.
    f.model.on_native_entry(f.at(10), 0x1000, "__pyx_pw_3nat_1run+0", "a.so+0x1000");
    f.model.on_native_entry(f.at(20), 0x9000, "__pyx_pf_3nat_run+0", "b.so+0x1000");
    CHECK(f.thread().depth() == 2);
    CHECK(!(f.thread().frames()[0].id == f.thread().frames()[1].id));
    // C++ functions that debug-info names by their DWARF name: "total_norm" for
    // ::total_norm and geometry::total_norm; and a function calling its own clone.
    f.model.on_native_entry(f.at(30), 0x2000, "total_norm+0", "b.so+0x2000");
    f.model.on_native_entry(f.at(40), 0x3000, "total_norm+0", "b.so+0x3000");
    f.model.on_native_entry(f.at(50), 0x4000, "helper.part.0+0", "b.so+0x4000");
    f.model.on_native_entry(f.at(60), 0x5000, "helper+0", "b.so+0x5000");
    CHECK(f.thread().depth() == 6);
    CHECK(stack_labels(f.model, f.thread()) == std::vector<std::string>{"nat.run", "nat.run",
                                                                        "total_norm", "total_norm",
                                                                        "helper", "helper"});
}

TEST_CASE("the same address in two processes is two functions; an exit without address")
{
    Feeder f;
    const ThreadKey other{200, 200};
    f.model.on_native_entry(f.at(0), 0x1000, "a+0", "");
    f.model.on_native_entry(f.at(0, other), 0x1000, "b+0", "");
    CHECK(f.model.label(f.thread().frames().back().id) == "a");
    CHECK(f.model.label(f.thread(other).frames().back().id) == "b");
    f.model.on_native_exit(f.at(5), 0, false); // the fast variant without ip: innermost
    CHECK(f.thread().depth() == 0);
}

TEST_CASE("names from a trace are made printable: control characters and ';' escaped")
{
    using pyust::analysis::printable;
    CHECK(printable("Klass.method") == "Klass.method");
    CHECK(printable("evil\x1b[2J") == "evil\\x1b[2J");
    CHECK(printable("a;b\nc\x7f") == "a\\x3bb\\x0ac\\x7f");
    CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9"); // UTF-8 stays as it is
}

TEST_CASE("a name is valid UTF-8 whatever the trace holds: each bad byte escaped")
{
    using pyust::analysis::printable;
    // A stray byte, a lead byte without its continuation, an overlong form, a surrogate.
    CHECK(printable("a\xff(\xc3(\xc1\x81\xed\xa0\x80") == "a\\xff(\\xc3(\\xc1\\x81\\xed\\xa0\\x80");
    // Cut inside a character: the lead byte alone.
    CHECK(printable("\xe2\x82") == "\\xe2\\x82");
    // Valid, but no XML character (U+FFFE), a C1 control (U+009B), a line separator (U+2028).
    CHECK(printable("\xef\xbf\xbe\xc2\x9b\xe2\x80\xa8") ==
          "\\xef\\xbf\\xbe\\xc2\\x9b\\xe2\\x80\\xa8");
    CHECK(printable("\xe2\x82\xac\xf0\x9f\x90\x8d\xc2\xa0") ==
          "\xe2\x82\xac\xf0\x9f\x90\x8d\xc2\xa0");
    CHECK(pyust::analysis::valid_utf8("a;\x01\xff") == "a;\x01\\xff");
}

TEST_CASE("a system call sits on top of the Python stack and closes at its exit")
{
    Feeder f;
    f.call(0, main_id);
    f.call(10, foo_id);
    f.model.on_syscall_entry(f.at(20), "write");
    CHECK(stack_labels(f.model, f.thread()) ==
          std::vector<std::string>{"__main__:<module>", "__main__:foo", "write"});
    f.model.on_syscall_exit(f.at(35));
    f.ret(40, foo_id);
    f.model.on_syscall_exit(f.at(45)); // an exit with no entry: nothing closes
    f.ret(50, main_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{
                          "__main__:<module> 1 50 20",
                          "  __main__:foo 1 30 15",
                          "    write 1 15 15",
                      });
    CHECK(f.thread().gaps().empty());
}

TEST_CASE("time off the CPU is its own frame, closed when the thread runs again")
{
    Feeder f;
    f.call(0, main_id);
    f.model.on_syscall_entry(f.at(10), "clock_nanosleep");
    f.model.on_switch_out(f.at(12));
    CHECK(stack_labels(f.model, f.thread()) ==
          std::vector<std::string>{"__main__:<module>", "clock_nanosleep", "[off-cpu]"});
    f.model.on_switch_in(thread_a.tid, 90);
    f.model.on_syscall_exit(f.at(95));
    f.ret(100, main_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{
                          "__main__:<module> 1 100 15",
                          "  clock_nanosleep 1 85 7",
                          "    [off-cpu] 1 78 78",
                      });
}

TEST_CASE("a system call whose exit was lost closes at the thread's next event in user space")
{
    // As the plugin's readers feed it (EventReader::thread_of): on_user_space before each
    // python:* event. Without it, foo's frame stood on rt_sigprocmask until the end.
    Feeder f;
    f.model.on_syscall_entry(f.at(0), "rt_sigprocmask"); // its exit lost
    Thread& thread = f.at(10);
    f.model.on_user_space(thread);
    f.model.on_call(thread, main_id);
    f.model.on_syscall_entry(f.at(20), "clock_nanosleep"); // its exit lost too, asleep
    f.model.on_switch_out(f.at(25));
    f.model.on_switch_in(thread_a.tid, 60);
    f.model.on_user_space(f.at(70));
    f.model.on_call(thread, foo_id);
    CHECK(stack_labels(f.model, f.thread()) ==
          std::vector<std::string>{"__main__:<module>", "__main__:foo"});
    f.ret(80, foo_id);
    f.ret(100, main_id);
    f.model.finish();
    CHECK(f.tree() == std::vector<std::string>{
                          "rt_sigprocmask 1 10 10",
                          "__main__:<module> 1 90 30",
                          "  clock_nanosleep 1 50 15",
                          "    [off-cpu] 1 35 35",
                          "  __main__:foo 1 10 10",
                      });
    CHECK(f.thread().gaps().empty());
}

TEST_CASE("exit_group never returns: it pushes no frame")
{
    Feeder f;
    f.call(0, main_id);
    f.model.on_syscall_entry(f.at(10), "exit_group");
    CHECK(f.thread().depth() == 1);
}
