// A libFuzzer differential target for the prefix table: from the input it builds a prefix list
// (short, long and nested prefixes, arbitrary bytes) and names, then checks that every
// implementation this CPU runs gives the naive reference's answer, for names anywhere in memory,
// ending right before an unmapped page and starting right after one, and for the Filter built
// from the same prefixes split into include and exclude lists. Any disagreement aborts.
// Build and run: tests/fuzz/run_fuzz.sh.
#include <fuzzer/FuzzedDataProvider.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "prefix/prefix_table.hpp"

namespace {

using pyust::prefix::Filter;
using pyust::prefix::Implementation;
using pyust::prefix::PrefixTable;
namespace reference = pyust::prefix::reference;

constexpr std::size_t max_name = 5000;

// One readable page between two PROT_NONE ones, made once: a name copied to its end or start
// touches an unmapped page, where an unsafe load faults.
class GuardedPage {
public:
    GuardedPage()
    {
        m_size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        void* p =
            mmap(nullptr, 3 * m_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED || mprotect(p, m_size, PROT_NONE) != 0 ||
            mprotect(static_cast<char*>(p) + 2 * m_size, m_size, PROT_NONE) != 0) {
            std::perror("Cannot set up the guarded page");
            std::abort();
        }
        m_base = static_cast<char*>(p) + m_size;
    }

    std::size_t size() const { return m_size; }

    std::string_view at_end(std::string_view text) const
    {
        char* start = m_base + m_size - text.size();
        std::memcpy(start, text.data(), text.size());
        return {start, text.size()};
    }

    std::string_view at_start(std::string_view text) const
    {
        std::memcpy(m_base, text.data(), text.size());
        return {m_base, text.size()};
    }

private:
    char* m_base = nullptr;
    std::size_t m_size = 0;
};

[[noreturn]] void disagree(const char* what, std::string_view name, long long got,
                           long long expected)
{
    std::fprintf(stderr, "Implementations disagree: what=%s name_size=%zu got=%lld expected=%lld\n",
                 what, name.size(), got, expected);
    std::abort();
}

long long found(std::optional<std::size_t> index)
{
    return index ? static_cast<long long>(*index) : -1;
}

std::string make_prefix(FuzzedDataProvider& input, const std::vector<std::string>& earlier)
{
    switch (input.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: // a long run of one byte: lengths past 16, 255 and up to 2000
        return std::string(input.ConsumeIntegralInRange<std::size_t>(0, 2000),
                           input.ConsumeIntegral<char>());
    case 1: // nested under an earlier prefix
        if (!earlier.empty()) {
            const std::string& base =
                earlier[input.ConsumeIntegralInRange<std::size_t>(0, earlier.size() - 1)];
            return base + "." + input.ConsumeRandomLengthString(40);
        }
        [[fallthrough]];
    default:
        return input.ConsumeRandomLengthString(300);
    }
}

// One input's prefixes, as a table per implementation and as filters, and their references.
struct Subject {
    std::vector<std::string> prefixes;
    std::vector<std::string> include;
    std::vector<std::string> exclude;
    std::vector<PrefixTable> tables;
    std::vector<Filter> filters;

    void check(std::string_view name) const
    {
        const long long expected = found(reference::find(prefixes, name));
        for (const PrefixTable& table : tables) {
            const long long got = found(table.find(name));
            if (got != expected)
                disagree(pyust::prefix::implementation_name(table.implementation()).data(), name,
                         got, expected);
        }
        const Filter::Decision decision = reference::decide(include, exclude, name);
        for (const Filter& filter : filters) {
            const Filter::Decision got = filter.decide(name);
            if (got.is_traced != decision.is_traced || got.reason != decision.reason ||
                got.index != decision.index)
                disagree("filter", name, static_cast<long long>(got.index),
                         static_cast<long long>(decision.index));
        }
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static const GuardedPage page;
    FuzzedDataProvider input(data, size);

    Subject subject;
    const std::size_t count = input.ConsumeIntegralInRange<std::size_t>(0, 70);
    for (std::size_t i = 0; i < count && input.remaining_bytes() > 0; ++i)
        subject.prefixes.push_back(make_prefix(input, subject.prefixes));
    for (const std::string& prefix : subject.prefixes)
        (input.ConsumeBool() ? subject.exclude : subject.include).push_back(prefix);
    for (const Implementation impl : {Implementation::scalar, Implementation::avx2}) {
        if (!pyust::prefix::is_supported(impl))
            continue;
        subject.tables.emplace_back(subject.prefixes, impl);
        subject.filters.emplace_back(subject.include, subject.exclude, impl);
    }

    // The input's own names, then each prefix as a name, as a parent and with a byte more.
    std::vector<std::string> names;
    while (input.remaining_bytes() > 0 && names.size() < 64)
        names.push_back(input.ConsumeRandomLengthString(max_name));
    for (const std::string& prefix : subject.prefixes) {
        names.push_back(prefix);
        names.push_back(prefix + ".x");
        names.push_back(prefix + "x");
    }

    for (const std::string& name : names) {
        const std::string_view kept(name.data(), std::min(name.size(), page.size()));
        subject.check(kept);
        subject.check(page.at_end(kept));
        subject.check(page.at_start(kept));
    }
    return 0;
}
