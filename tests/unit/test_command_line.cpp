// Unit tests of the command line python:process reports: quoting and the size cap.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hook/command_line.hpp"

using pyust::hook::join_command;

TEST_CASE("plain words are joined by spaces as they are")
{
    CHECK(join_command({"python3", "-m", "test", "-j0", "--timeout=60", "a/b.py"}) ==
          "python3 -m test -j0 --timeout=60 a/b.py");
    CHECK(join_command({}) == "");
}

TEST_CASE("words a shell would split or expand are single-quoted")
{
    CHECK(join_command({"python3", "-c", "print(1)"}) == "python3 -c 'print(1)'");
    CHECK(join_command({"app.py", "two words", ""}) == "app.py 'two words' ''");
    CHECK(join_command({"app.py", "*", "$HOME", "a;b"}) == "app.py '*' '$HOME' 'a;b'");
    CHECK(join_command({"echo", "it's"}) == "echo 'it'\\''s'");
    CHECK(join_command({"caf\xc3\xa9.py"}) == "caf\xc3\xa9.py"); // UTF-8 stays plain
}

TEST_CASE("a line longer than the limit is cut and ends in an ellipsis")
{
    const std::string line = join_command({"python3", std::string(100, 'x')}, 20);
    CHECK(line == "python3 xxxxxxxxx...");
    CHECK(line.size() == 20);
    CHECK(join_command({"python3", "abc"}, 11) == "python3 abc"); // exactly the limit: whole
}

TEST_CASE("the cut never splits a UTF-8 character")
{
    // "é" is two bytes; with room for 13 bytes before "...", the cut would fall inside
    // the third one.
    const std::string line =
        join_command({"python3", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"}, 16);
    CHECK(line == "python3 \xc3\xa9\xc3\xa9...");
}

TEST_CASE("this process's own command line is read from /proc")
{
    const auto words = pyust::hook::read_own_cmdline();
    REQUIRE(!words.empty());
    CHECK(words[0].find("test_command_line") != std::string::npos);
}
