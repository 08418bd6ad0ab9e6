// Unit tests of the hook's registry: id scheme, stable entries, fork.
#include <doctest/doctest.h>

#include <set>

#include "hook/registry.hpp"

using pyust::hook::CodeInfo;
using pyust::hook::make_code_id;
using pyust::hook::Registry;

TEST_CASE("a code id carries the registering pid in its high half")
{
    CHECK(make_code_id(0x1234, 7) == 0x0000123400000007ULL);
    CHECK(make_code_id(0xFFFFFFFFu, 0xFFFFFFFFu) == 0xFFFFFFFFFFFFFFFFULL);
}

TEST_CASE("registration assigns increasing ids and keeps every field")
{
    Registry registry(42);
    const CodeInfo& a = registry.add("pkg.mod", "Klass.method", "/src/mod.py", 10, true);
    const CodeInfo& b = registry.add("__main__", "<module>", "app.py", 1, false);
    CHECK(a.id == make_code_id(42, 1));
    CHECK(b.id == make_code_id(42, 2));
    CHECK(a.module == "pkg.mod");
    CHECK(a.qualname == "Klass.method");
    CHECK(a.file == "/src/mod.py");
    CHECK(a.first_line == 10);
    CHECK(a.trace == pyust::hook::k_traced);
    CHECK(b.trace == 0);
    CHECK(registry.code_count() == 2);
}

TEST_CASE("entries never move: the hook keeps pointers to them on code objects")
{
    Registry registry(1);
    const CodeInfo* first = &registry.add("m", "f", "f.py", 1, true);
    for (int i = 0; i < 100000; ++i)
        registry.add("m", "g" + std::to_string(i), "f.py", static_cast<std::uint32_t>(i), true);
    CHECK(first->qualname == "f");
    CHECK(first->id == make_code_id(1, 1));
}

TEST_CASE("for_each_code visits every registration once, in order")
{
    Registry registry(5);
    for (int i = 0; i < 10; ++i)
        registry.add("m", std::to_string(i), "f.py", 1, true);
    std::set<std::uint64_t> ids;
    std::uint64_t previous = 0;
    registry.for_each_code([&](const CodeInfo& info) {
        CHECK(info.id > previous);
        previous = info.id;
        ids.insert(info.id);
    });
    CHECK(ids.size() == 10);
}

TEST_CASE("after fork the child gets its own id space and forgets the parent's threads")
{
    Registry registry(100);
    const CodeInfo& inherited = registry.add("m", "f", "f.py", 1, true);
    registry.set_thread_name(100, "MainThread");
    registry.set_thread_name(101, "worker");
    registry.after_fork_child(200);
    CHECK(inherited.id == make_code_id(100, 1)); // the parent's id stays valid
    CHECK(registry.add("m", "g", "f.py", 2, true).id == make_code_id(200, 1));
    int threads = 0;
    registry.for_each_thread([&](std::int64_t, const std::string&) { ++threads; });
    CHECK(threads == 0);
}

TEST_CASE("a thread's name can change")
{
    Registry registry(1);
    registry.set_thread_name(7, "Thread-1");
    registry.set_thread_name(7, "renamed");
    std::string seen;
    registry.for_each_thread([&](std::int64_t tid, const std::string& name) {
        CHECK(tid == 7);
        seen = name;
    });
    CHECK(seen == "renamed");
}

TEST_CASE("python:code never records an empty string: babeltrace2 2.0.4 dumps show a stale one")
{
    Registry registry(7);
    const CodeInfo& generated = registry.add("?", "__init__", "", 1, true);
    CHECK(generated.file == pyust::hook::k_no_file_name);
    CHECK(std::string(pyust::hook::k_no_file_name) == "<no file name>");
    const CodeInfo& blank = registry.add("", "", "x.py", 1, true, "");
    CHECK(blank.module == "?");
    CHECK(blank.qualname == "?");
    CHECK(blank.name == "?");
}

TEST_CASE("the code's name is co_name, else the qualified name's last part")
{
    Registry registry(7);
    CHECK(registry.add("m", "A.f", "m.py", 1, true).name == "f");
    CHECK(registry.add("m", "f.<locals>.<lambda>", "m.py", 1, true).name == "<lambda>");
    const CodeInfo& renamed =
        registry.add("numpy.core.overrides", "decorator.<locals>.public_api",
                     "<__array_function__ internals>", 177, true, "concatenate");
    CHECK(renamed.name == "concatenate");
    CHECK(renamed.qualname == "decorator.<locals>.public_api");
}
