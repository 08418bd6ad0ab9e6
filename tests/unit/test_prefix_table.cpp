// Unit tests of the module-name prefix table and the include/exclude filter: the matching rules
// on the implementation PYUST_SIMD picks (Meson registers this suite once per implementation),
// then every implementation this CPU runs against the naive reference on random and adversarial
// tables, and on names that end right before, or start right after, an unmapped page.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "prefix/prefix_table.hpp"

using pyust::prefix::default_implementation;
using pyust::prefix::Filter;
using pyust::prefix::Implementation;
using pyust::prefix::is_supported;
using pyust::prefix::matches;
using pyust::prefix::PrefixTable;
namespace reference = pyust::prefix::reference;

namespace {

using Prefixes = std::vector<std::string>;

// -1 for no match: doctest prints it, where it cannot print a std::optional.
long long found(std::optional<std::size_t> index)
{
    return index ? static_cast<long long>(*index) : -1;
}

long long find(const Prefixes& prefixes, std::string_view name)
{
    return found(PrefixTable(prefixes).find(name));
}

// Every implementation this build and CPU run, whatever PYUST_SIMD says.
std::vector<Implementation> runnable_implementations()
{
    std::vector<Implementation> impls{Implementation::scalar};
    if (is_supported(Implementation::avx2))
        impls.push_back(Implementation::avx2);
    return impls;
}

// Bytes as C escapes, for failure messages about names with control or high bytes.
std::string printable(std::string_view text)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (const char c : text.substr(0, 200)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
            out += c;
        } else {
            out += "\\x";
            out += digits[byte >> 4];
            out += digits[byte & 15];
        }
    }
    if (text.size() > 200)
        out += "...(" + std::to_string(text.size()) + " bytes)";
    return out;
}

// Tables of one prefix list for every runnable implementation, checked against the reference.
class Differential {
public:
    explicit Differential(Prefixes prefixes) : m_prefixes(std::move(prefixes))
    {
        for (const Implementation impl : runnable_implementations())
            m_tables.emplace_back(m_prefixes, impl);
    }

    // Checks every table on name; returns false (after one failed CHECK) on a disagreement.
    bool check(std::string_view name) const
    {
        const long long expected = found(reference::find(m_prefixes, name));
        for (const PrefixTable& table : m_tables) {
            const long long got = found(table.find(name));
            if (got != expected) {
                INFO("implementation=" << pyust::prefix::implementation_name(table.implementation())
                                       << " name=" << printable(name)
                                       << " prefixes=" << m_prefixes.size());
                CHECK(got == expected);
                return false;
            }
        }
        return true;
    }

    const Prefixes& prefixes() const { return m_prefixes; }

private:
    Prefixes m_prefixes;
    std::vector<PrefixTable> m_tables;
};

// Three pages, the first and last PROT_NONE: the middle one's first and last bytes touch an
// unmapped page, where a load past a name's start or end faults.
class GuardedPage {
public:
    GuardedPage()
    {
        m_page_size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        void* p = mmap(nullptr, 3 * m_page_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        m_base = static_cast<char*>(p);
        REQUIRE(mprotect(m_base, m_page_size, PROT_NONE) == 0);
        REQUIRE(mprotect(m_base + 2 * m_page_size, m_page_size, PROT_NONE) == 0);
    }
    ~GuardedPage() { munmap(m_base, 3 * m_page_size); }
    GuardedPage(const GuardedPage&) = delete;
    GuardedPage& operator=(const GuardedPage&) = delete;

    // A copy of text whose last byte is the page's last byte. Precondition: it fits.
    std::string_view at_end(std::string_view text)
    {
        REQUIRE(text.size() <= m_page_size);
        char* start = m_base + 2 * m_page_size - text.size();
        std::memcpy(start, text.data(), text.size());
        return {start, text.size()};
    }

    // A copy of text whose first byte is the page's first byte. Precondition: it fits.
    std::string_view at_start(std::string_view text)
    {
        REQUIRE(text.size() <= m_page_size);
        char* start = m_base + m_page_size;
        std::memcpy(start, text.data(), text.size());
        return {start, text.size()};
    }

private:
    char* m_base = nullptr;
    std::size_t m_page_size = 0;
};

// The lengths that cross the kernels' lane, head and saturation limits.
const std::size_t adversarial_lengths[] = {0,  1,  2,   14,  15,  16,  17,  31,   32,  33,
                                           63, 64, 127, 128, 255, 256, 257, 1000, 1500};

std::string random_text(std::mt19937_64& rng, std::size_t length, std::string_view alphabet)
{
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    std::string text(length, '\0');
    for (char& c : text)
        c = alphabet[pick(rng)];
    return text;
}

// A small alphabet with the separator, a zero byte and a high byte: prefixes collide, nest and
// end on and off boundaries often, and no byte value is treated as special by accident.
constexpr std::string_view alphabet{"ab.\0\xff", 5};

Prefixes random_prefixes(std::mt19937_64& rng, std::size_t count)
{
    std::uniform_int_distribution<std::size_t> length_pick(0, std::size(adversarial_lengths) - 1);
    std::uniform_int_distribution<int> kind(0, 9);
    Prefixes prefixes;
    for (std::size_t i = 0; i < count; ++i) {
        const int k = kind(rng);
        if (k < 3 && !prefixes.empty()) {
            // Nest under an earlier prefix: longest-match must prefer the deeper one.
            std::string base = prefixes[rng() % prefixes.size()];
            prefixes.push_back(base + "." + random_text(rng, rng() % 20, alphabet));
        } else if (k < 4 && !prefixes.empty()) {
            prefixes.push_back(prefixes[rng() % prefixes.size()]); // a duplicate
        } else if (k < 5) {
            prefixes.push_back(random_text(rng, rng() % 6, alphabet) + "."); // a trailing dot
        } else {
            // Share the first bytes with the others, at an adversarial length.
            std::string text = random_text(rng, adversarial_lengths[length_pick(rng)], "ab.");
            prefixes.push_back(std::move(text));
        }
    }
    return prefixes;
}

// Names near the prefixes: each one exactly, as a parent of a submodule, extended past the
// boundary, cut short, and with one byte changed; plus unrelated ones.
std::vector<std::string> names_near(std::mt19937_64& rng, const Prefixes& prefixes)
{
    std::vector<std::string> names;
    for (const std::string& prefix : prefixes) {
        names.push_back(prefix);
        names.push_back(prefix + "." + random_text(rng, rng() % 40, alphabet));
        names.push_back(prefix + random_text(rng, 1 + rng() % 3, alphabet));
        if (!prefix.empty()) {
            names.push_back(prefix.substr(0, rng() % prefix.size()));
            std::string changed = prefix;
            changed[rng() % changed.size()] ^= static_cast<char>(1 + rng() % 255);
            names.push_back(changed + ".x");
        }
    }
    for (int i = 0; i < 20; ++i)
        names.push_back(random_text(rng, rng() % 300, alphabet));
    return names;
}

} // namespace

TEST_CASE("a prefix matches on a dotted boundary only")
{
    CHECK(matches("numpy", "numpy"));
    CHECK(matches("numpy", "numpy.core"));
    CHECK(matches("numpy", "numpy.core.multiarray"));
    CHECK_FALSE(matches("numpy", "numpyro"));
    CHECK_FALSE(matches("numpy", "numpy_financial"));
    CHECK_FALSE(matches("numpy", "num"));
    CHECK_FALSE(matches("numpy", "Numpy"));
    CHECK(matches("numpy.", "numpy"));
    CHECK(matches("numpy.", "numpy.core"));
    CHECK(matches("pandas.io", "pandas.io.parsers"));
    CHECK_FALSE(matches("pandas.io", "pandas.iox"));
    CHECK_FALSE(matches("pandas.io", "pandas"));
    CHECK(matches("", ""));
    CHECK(matches("", "anything.at.all"));

    const Prefixes prefixes{"numpy", "pandas.io", "myproj"};
    CHECK(find(prefixes, "numpy") == 0);
    CHECK(find(prefixes, "numpy.linalg") == 0);
    CHECK(find(prefixes, "numpyro") == -1);
    CHECK(find(prefixes, "pandas.io.formats") == 1);
    CHECK(find(prefixes, "pandas.core") == -1);
    CHECK(find(prefixes, "pandas") == -1);
    CHECK(find(prefixes, "myproj") == 2);
    CHECK(find(prefixes, "myproject") == -1);
    CHECK(find(prefixes, "") == -1);
    CHECK(find(prefixes, ".numpy") == -1);
}

TEST_CASE("a trailing dot is dropped, and the table shows the prefixes it holds")
{
    const PrefixTable table({"numpy.", ".", "a.b"});
    REQUIRE(table.size() == 3);
    CHECK(table.prefix(0) == "numpy");
    CHECK(table.prefix(1) == "");
    CHECK(table.prefix(2) == "a.b");
    CHECK(found(table.find("numpy")) == 0);
    CHECK(found(table.find("numpy.core")) == 0);
    CHECK(found(table.find("numpyro")) == 1); // "." is the empty prefix
}

TEST_CASE("the empty prefix matches every name, the empty one included")
{
    const Prefixes prefixes{""};
    CHECK(find(prefixes, "") == 0);
    CHECK(find(prefixes, "x") == 0);
    CHECK(find(prefixes, ".") == 0);
    CHECK(find(prefixes, std::string(5000, 'q')) == 0);
    CHECK(find({"numpy", ""}, "numpy.core") == 0);
    CHECK(find({"numpy", ""}, "scipy") == 1);
}

TEST_CASE("the longest match wins whatever the order, and the first of equal prefixes")
{
    CHECK(find({"a", "a.b", "a.b.c"}, "a.b.c.d") == 2);
    CHECK(find({"a.b.c", "a.b", "a"}, "a.b.c.d") == 0);
    CHECK(find({"a.b", "a", "a.b.c"}, "a.b.x") == 0);
    CHECK(find({"a", "a.b.c", "a.b"}, "a.x") == 0);
    CHECK(find({"x", "a.b", "a.b."}, "a.b.c") == 1);
    CHECK(find({"a.b.", "a.b"}, "a.b") == 0);
}

TEST_CASE("an empty table matches nothing")
{
    const PrefixTable defaulted;
    CHECK(defaulted.size() == 0);
    CHECK(defaulted.implementation() == Implementation::scalar);
    CHECK(found(defaulted.find("numpy")) == -1);
    CHECK(found(defaulted.find({})) == -1);
    CHECK(find({}, "numpy") == -1);
    CHECK(find({}, "") == -1);
}

TEST_CASE("names and prefixes are bytes: zero bytes, high bytes, no folding")
{
    const std::string with_zero("a\0b", 3);
    const Prefixes prefixes{with_zero, "\xc3\xa9t\xc3\xa9", "ABC"};
    CHECK(find(prefixes, with_zero) == 0);
    CHECK(find(prefixes, with_zero + ".c") == 0);
    CHECK(find(prefixes, std::string("a\0c", 3)) == -1);
    CHECK(find(prefixes, "a") == -1);
    CHECK(find(prefixes, "\xc3\xa9t\xc3\xa9.x") == 1);
    CHECK(find(prefixes, "abc") == -1);
    // A zero byte where the name continues is not an end: "a" must not match "a\0".
    CHECK(find({"a"}, std::string("a\0", 2)) == -1);
    CHECK(find({"a"}, std::string("a.\0", 3)) == 0);
}

TEST_CASE("long prefixes and names: lengths of 128 and more, up to and past 64 KiB")
{
    for (const std::size_t length : {127u, 128u, 200u, 255u, 256u, 1000u, 65535u, 65536u, 70000u}) {
        CAPTURE(length);
        const std::string prefix(length, 'p');
        const Prefixes prefixes{"p", prefix, std::string(length - 1, 'p')};
        CHECK(find(prefixes, prefix) == 1);
        CHECK(find(prefixes, prefix + ".mod") == 1);
        CHECK(find(prefixes, prefix + "p") == -1);
        CHECK(find(prefixes, std::string(length - 1, 'p') + ".x") == 2);
        std::string last_differs = prefix;
        last_differs.back() = 'q';
        CHECK(find(prefixes, last_differs) == -1);
        CHECK(find(prefixes, "p." + prefix) == 0);
    }
}

TEST_CASE("no limit on the number of prefixes: blocks of 16 chain")
{
    Prefixes prefixes;
    for (int i = 0; i < 1000; ++i)
        prefixes.push_back("pkg" + std::to_string(i));
    const PrefixTable table(prefixes);
    for (int i = 0; i < 1000; ++i) {
        const std::string name = "pkg" + std::to_string(i) + ".sub";
        REQUIRE(found(table.find(name)) == i);
    }
    CHECK(found(table.find("pkg1000")) == -1);
    CHECK(found(table.find("pkg")) == -1);
}

TEST_CASE("the filter: the most specific prefix decides, exclude wins a tie")
{
    using Reason = Filter::Reason;
    const Filter filter({"numpy", "myproj", "pandas"},
                        {"numpy.testing", "pandas", "myproj.vendor"});

    auto decision = filter.decide("numpy.linalg");
    CHECK(decision.is_traced);
    CHECK(decision.reason == Reason::included);
    CHECK(decision.index == 0);

    decision = filter.decide("numpy.testing.utils");
    CHECK_FALSE(decision.is_traced);
    CHECK(decision.reason == Reason::excluded);
    CHECK(decision.index == 0);

    decision = filter.decide("pandas.core");
    CHECK_FALSE(decision.is_traced);
    CHECK(decision.reason == Reason::excluded);
    CHECK(decision.index == 1);

    decision = filter.decide("myproj.vendor.six");
    CHECK_FALSE(decision.is_traced);
    CHECK(decision.index == 2);
    CHECK(filter.is_traced("myproj.vendored"));
    CHECK(filter.is_traced("myproj"));

    decision = filter.decide("json");
    CHECK_FALSE(decision.is_traced);
    CHECK(decision.reason == Reason::not_included);
    CHECK_FALSE(filter.is_traced("numpyro"));

    // A general exclude under a specific include: the include is more specific.
    const Filter refine({"email.mime"}, {"email"});
    CHECK(refine.is_traced("email.mime.text"));
    CHECK_FALSE(refine.is_traced("email.parser"));
    CHECK_FALSE(refine.is_traced("email"));
}

TEST_CASE("the filter with an empty include list includes all that is not excluded")
{
    using Reason = Filter::Reason;
    const Filter filter({}, {"test", "unittest."});
    CHECK(filter.is_traced("numpy"));
    CHECK(filter.decide("numpy").reason == Reason::default_in);
    CHECK(filter.is_traced("testing"));
    CHECK_FALSE(filter.is_traced("test.support"));
    CHECK_FALSE(filter.is_traced("unittest"));
    CHECK(filter.decide("unittest.mock").reason == Reason::excluded);
    CHECK(filter.decide("unittest.mock").index == 1);

    CHECK(Filter().is_traced("anything"));
    CHECK(Filter().decide("").reason == Reason::default_in);
    CHECK_FALSE(Filter({}, {""}).is_traced("anything"));
    CHECK_FALSE(Filter({""}, {""}).is_traced("anything"));
    CHECK(Filter({""}, {"x"}).is_traced("y"));
}

TEST_CASE("dispatch: PYUST_SIMD picks the implementation, explicit choices are checked")
{
    const char* forced = std::getenv("PYUST_SIMD");
    const std::string_view value = forced != nullptr ? forced : "";
    INFO("PYUST_SIMD=" << value);
    if (value == "avx2" && !is_supported(Implementation::avx2)) {
        // Forcing AVX2 where it cannot run must fail with a message, not crash.
        CHECK_THROWS_AS(default_implementation(), std::runtime_error);
        CHECK_THROWS_AS(PrefixTable({"x"}), std::runtime_error);
        return;
    }
    const Implementation impl = default_implementation();
    if (value == "scalar")
        CHECK(impl == Implementation::scalar);
    if (value == "avx2")
        CHECK(impl == Implementation::avx2);
    if (value.empty())
        CHECK(impl ==
              (is_supported(Implementation::avx2) ? Implementation::avx2 : Implementation::scalar));
    CHECK(PrefixTable({"x"}).implementation() == impl);
    CHECK(Filter({"x"}, {}).implementation() == impl);
    MESSAGE("prefix table implementation: " << pyust::prefix::implementation_name(impl));

    CHECK(is_supported(Implementation::scalar));
    CHECK(PrefixTable({"x"}, Implementation::scalar).implementation() == Implementation::scalar);
    if (is_supported(Implementation::avx2))
        CHECK(PrefixTable({"x"}, Implementation::avx2).implementation() == Implementation::avx2);
    else
        CHECK_THROWS_AS(PrefixTable({"x"}, Implementation::avx2), std::invalid_argument);
    CHECK(pyust::prefix::implementation_name(Implementation::avx2) == "avx2");
    CHECK(pyust::prefix::implementation_name(Implementation::scalar) == "scalar");
}

TEST_CASE("differential: every adversarial length, with shared first bytes")
{
    // Each length twice, sharing all bytes but the last, plus submodule-shaped variants: every
    // candidate passes the first-byte test, and the full compare must sort them out.
    Prefixes prefixes;
    for (const std::size_t length : adversarial_lengths) {
        prefixes.push_back(std::string(length, 'm'));
        if (length > 0)
            prefixes.push_back(std::string(length - 1, 'm') + "n");
        if (length > 2)
            prefixes.push_back(std::string(length / 2, 'm') + "." + std::string(length / 2, 'm'));
    }
    const Differential tables(prefixes);
    for (std::size_t length = 0; length <= 1600; ++length) {
        const std::string same(length, 'm');
        CHECK(tables.check(same));
        CHECK(tables.check(same + "."));
        CHECK(tables.check(same + ".x"));
        CHECK(tables.check(same + "n"));
        CHECK(tables.check(same + "n.y"));
    }
}

TEST_CASE("differential: random tables and names near them")
{
    std::mt19937_64 rng(20240611);
    for (int round = 0; round < 1000; ++round) {
        const std::size_t count = round < 500 ? rng() % 20 : rng() % 120;
        const Differential tables(random_prefixes(rng, count));
        for (const std::string& name : names_near(rng, tables.prefixes()))
            if (!tables.check(name))
                break;
    }
}

TEST_CASE("differential: names ending at and starting at an unmapped page")
{
    GuardedPage page;
    std::mt19937_64 rng(7);
    Prefixes prefixes{
        "a", "ab", "abc.d", "", "b.c", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnopq"};
    const std::string long_one(300, 'a');
    prefixes.push_back(long_one);
    for (const Prefixes& list : {prefixes, Prefixes{"abcdefghijklmnop"}, Prefixes{"a.b"}}) {
        const Differential tables(list);
        for (std::size_t length = 0; length <= 320; ++length) {
            for (const std::string& text :
                 {long_one.substr(0, length), std::string("abcdefghijklmnopq").substr(0, length),
                  random_text(rng, length, "ab.c"), std::string(length, '.')}) {
                CHECK(tables.check(page.at_end(text)));
                CHECK(tables.check(page.at_start(text)));
            }
        }
    }
}

TEST_CASE("differential: filters against the reference")
{
    std::mt19937_64 rng(99);
    for (int round = 0; round < 200; ++round) {
        const Prefixes include = random_prefixes(rng, rng() % 12);
        const Prefixes exclude = random_prefixes(rng, rng() % 12);
        Prefixes both = include;
        both.insert(both.end(), exclude.begin(), exclude.end());
        std::vector<Filter> filters;
        for (const Implementation impl : runnable_implementations())
            filters.emplace_back(include, exclude, impl);
        for (const std::string& name : names_near(rng, both)) {
            const Filter::Decision expected = reference::decide(include, exclude, name);
            for (const Filter& filter : filters) {
                const Filter::Decision got = filter.decide(name);
                if (got.is_traced != expected.is_traced || got.reason != expected.reason ||
                    got.index != expected.index) {
                    INFO("name=" << printable(name));
                    CHECK(got.is_traced == expected.is_traced);
                    CHECK(static_cast<int>(got.reason) == static_cast<int>(expected.reason));
                    CHECK(got.index == expected.index);
                }
            }
        }
    }
}
