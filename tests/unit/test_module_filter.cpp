// Unit tests of the report's module filter: which frames `--modules` shows.
#include <doctest/doctest.h>

#include <stdexcept>

#include "analysis/module_filter.hpp"

using pyust::analysis::ModuleFilter;
using pyust::analysis::ThreadKey;

TEST_CASE("modules match on dotted boundaries, blanks ignored")
{
    const ModuleFilter filter(" numpy , myproj.core ");
    CHECK(filter.prefixes() == std::vector<std::string>{"numpy", "myproj.core"});
    CHECK(filter.shows_module("numpy"));
    CHECK(filter.shows_module("numpy.linalg"));
    CHECK_FALSE(filter.shows_module("numpyro"));
    CHECK(filter.shows_module("myproj.core.io"));
    CHECK_FALSE(filter.shows_module("myproj"));
    CHECK_FALSE(filter.shows_module("__main__"));
}

TEST_CASE("an empty list is refused with a message")
{
    CHECK_THROWS_AS(ModuleFilter(" , "), std::invalid_argument);
}

TEST_CASE("code ids take the verdict of their latest registration; unknown ids are shown")
{
    ModuleFilter filter("app");
    filter.on_code(1, "app.views");
    filter.on_code(2, "json.decoder");
    CHECK(filter.shows_code(1));
    CHECK_FALSE(filter.shows_code(2));
    CHECK(filter.shows_code(99)); // never registered: shown, so an error stays visible
    filter.on_code(2, "app.json");
    CHECK(filter.shows_code(2));
}

TEST_CASE("C calls are shown by owner and their returns pair up per thread")
{
    ModuleFilter filter("builtins");
    const ThreadKey one{10, 10};
    const ThreadKey two{10, 11};
    CHECK(filter.on_c_call(one, "builtins"));
    CHECK_FALSE(filter.on_c_call(one, "_json"));
    CHECK_FALSE(filter.on_c_call(two, "re"));
    CHECK_FALSE(filter.on_c_return(one)); // closes _json
    CHECK(filter.on_c_return(one));       // closes builtins
    CHECK_FALSE(filter.on_c_return(two)); // closes re
    CHECK(filter.on_c_return(two));       // nothing open: shown, the model reports it
}
