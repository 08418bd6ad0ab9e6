// The prefix table: the search-order layout every kernel reads (prefix_kernels.hpp), the scalar
// kernel (the reference the AVX2 one must agree with, and what CPUs without AVX2 run), the naive
// reference of the tests, the Filter, and the choice of implementation, made once per process.
// Compiled for the baseline CPU: nothing here may use AVX2.
#include "prefix/prefix_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "prefix/prefix_kernels.hpp"

namespace pyust::prefix {

namespace scalar {

std::int32_t find(const kernel::TableView& table, const char* name, std::size_t size) noexcept
{
    for (std::size_t entry = 0; entry < table.count; ++entry) {
        const std::size_t length = table.lengths[entry];
        if (length > size)
            continue;
        if (length == 0)
            return table.index[entry];
        const kernel::Group& group = table.groups[entry / kernel::group_size];
        const std::size_t lane = entry % kernel::group_size;
        // The same cheap tests as the SIMD filter, in the same order of selectivity.
        if (static_cast<unsigned char>(name[group.pos[lane]]) != group.ch[lane])
            continue;
        if (length < size && name[length] != '.')
            continue;
        if (std::memcmp(name, table.texts[entry], length) == 0)
            return table.index[entry];
    }
    return -1;
}

} // namespace scalar

namespace {

using KernelFn = std::int32_t (*)(const kernel::TableView&, const char*, std::size_t) noexcept;

constexpr std::size_t max_prefixes =
    static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());

std::string_view normalize(std::string_view prefix) noexcept
{
    if (!prefix.empty() && prefix.back() == '.')
        prefix.remove_suffix(1);
    return prefix;
}

bool cpu_has_avx2() noexcept
{
#if PYUST_PREFIX_HAVE_AVX2
    // libgcc checks that the OS saves the YMM registers before it reports AVX2.
    static const bool has_avx2 = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
               __builtin_cpu_supports("bmi2");
    }();
    return has_avx2;
#else
    return false;
#endif
}

KernelFn kernel_for(Implementation impl) noexcept
{
#if PYUST_PREFIX_HAVE_AVX2
    if (impl == Implementation::avx2)
        return avx2::find;
#endif
    (void)impl;
    return scalar::find;
}

// The outcome of reading PYUST_SIMD and the CPU once: an implementation, or why there is none.
struct Choice {
    Implementation impl = Implementation::scalar;
    std::string error;
};

Choice choose_implementation()
{
    const char* forced = std::getenv("PYUST_SIMD");
    if (forced != nullptr && *forced != '\0') {
        const std::string_view value = forced;
        const std::string key = "PYUST_SIMD=" + std::string(value);
        if (value == "scalar")
            return {Implementation::scalar, {}};
        if (value != "avx2")
            return {Implementation::scalar,
                    "Cannot choose the prefix table implementation: " + key +
                        " is unknown; set PYUST_SIMD to avx2 or scalar, or unset it"};
#if PYUST_PREFIX_HAVE_AVX2
        if (!cpu_has_avx2())
            return {Implementation::scalar,
                    "Cannot use the AVX2 prefix table: " + key +
                        ", but this CPU lacks AVX2, BMI1 or BMI2; set PYUST_SIMD=scalar or "
                        "unset it"};
        return {Implementation::avx2, {}};
#else
        return {Implementation::scalar,
                "Cannot use the AVX2 prefix table: " + key +
                    ", but this build has none (built with -Dsimd=scalar or for a CPU family "
                    "without AVX2); set PYUST_SIMD=scalar or unset it"};
#endif
    }
    if (cpu_has_avx2())
        return {Implementation::avx2, {}};
#if PYUST_PREFIX_REQUIRE_AVX2
    return {Implementation::scalar,
            "Cannot use the AVX2 prefix table this build requires (-Dsimd=avx2): this CPU lacks "
            "AVX2, BMI1 or BMI2; set PYUST_SIMD=scalar or rebuild with -Dsimd=auto"};
#else
    return {Implementation::scalar, {}};
#endif
}

// For each entry with bytes, the position (below 16 and its length) whose byte the fewest
// entries share at that position: then a name that matches one entry rarely passes the filter
// of another (`numpy` and `numba` differ at 3, not at 0). Ties go to the later position, as
// related names (`email`, `encodings`) tend to share their first bytes.
class PositionChooser {
public:
    explicit PositionChooser(const std::vector<std::string>& texts)
        : m_counts(kernel::head_size * 256)
    {
        for (const std::string& text : texts)
            for (std::size_t p = 0; p < std::min(text.size(), kernel::head_size); ++p)
                ++m_counts[p * 256 + static_cast<unsigned char>(text[p])];
    }

    // Precondition: !text.empty().
    std::uint8_t choose(const std::string& text) const noexcept
    {
        std::size_t best = 0;
        for (std::size_t p = 1; p < std::min(text.size(), kernel::head_size); ++p)
            if (count(text, p) <= count(text, best))
                best = p;
        return static_cast<std::uint8_t>(best);
    }

private:
    std::uint32_t count(const std::string& text, std::size_t p) const noexcept
    {
        return m_counts[p * 256 + static_cast<unsigned char>(text[p])];
    }

    std::vector<std::uint32_t> m_counts;
};

kernel::Group unused_group() noexcept
{
    kernel::Group group;
    std::memset(group.pos, kernel::no_position, sizeof group.pos);
    std::memset(group.ch, 1, sizeof group.ch);
    std::memset(group.len, 0xFF, sizeof group.len);
    std::memset(group.bound, kernel::no_position, sizeof group.bound);
    return group;
}

} // namespace

struct PrefixTable::Data {
    std::vector<std::string> prefixes; // normalized, in the order given
    std::vector<kernel::Group> groups;
    std::vector<std::uint8_t> heads;
    std::vector<std::size_t> lengths;
    std::vector<const char*> texts;
    std::vector<std::int32_t> index;
    kernel::TableView view{};

    explicit Data(const std::vector<std::string>& given);
};

PrefixTable::Data::Data(const std::vector<std::string>& given)
{
    if (given.size() > max_prefixes)
        throw std::length_error(
            "Cannot build a prefix table: count=" + std::to_string(given.size()) + " exceeds " +
            std::to_string(max_prefixes));
    const std::size_t count = given.size();
    prefixes.reserve(count);
    for (const std::string& prefix : given)
        prefixes.emplace_back(normalize(prefix));

    // Longest first, so that the first match in search order is the longest one; stable, so
    // that equal prefixes keep the order given and the first given wins.
    std::vector<std::int32_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [this](std::int32_t a, std::int32_t b) {
        return prefixes[static_cast<std::size_t>(a)].size() >
               prefixes[static_cast<std::size_t>(b)].size();
    });

    const PositionChooser chooser(prefixes);
    groups.assign((count + kernel::group_size - 1) / kernel::group_size, unused_group());
    heads.assign(count * kernel::head_size, 0);
    lengths.resize(count);
    texts.resize(count);
    index.resize(count);
    for (std::size_t entry = 0; entry < count; ++entry) {
        const std::string& text = prefixes[static_cast<std::size_t>(order[entry])];
        const std::size_t length = text.size();
        lengths[entry] = length;
        texts[entry] = text.data();
        index[entry] = order[entry];
        std::memcpy(&heads[entry * kernel::head_size], text.data(),
                    std::min(length, kernel::head_size));

        kernel::Group& group = groups[entry / kernel::group_size];
        const std::size_t lane = entry % kernel::group_size;
        group.len[lane] = static_cast<std::uint8_t>(std::min<std::size_t>(length, 255));
        if (length == 0) {
            group.ch[lane] = 0; // pos and bound stay no_position: the empty entry always passes
            continue;
        }
        group.pos[lane] = chooser.choose(text);
        group.ch[lane] = static_cast<std::uint8_t>(text[group.pos[lane]]);
        if (length < kernel::head_size)
            group.bound[lane] = static_cast<std::uint8_t>(length);
    }

    view = {groups.data(),  groups.size(), count,       heads.data(),
            lengths.data(), texts.data(),  index.data()};
}

std::string_view implementation_name(Implementation impl) noexcept
{
    return impl == Implementation::avx2 ? "avx2" : "scalar";
}

bool is_supported(Implementation impl) noexcept
{
    return impl == Implementation::scalar || cpu_has_avx2();
}

Implementation default_implementation()
{
    static const Choice choice = choose_implementation();
    if (!choice.error.empty())
        throw std::runtime_error(choice.error);
    return choice.impl;
}

bool matches(std::string_view prefix, std::string_view name) noexcept
{
    prefix = normalize(prefix);
    if (name.size() < prefix.size() || std::string_view(name.data(), prefix.size()) != prefix)
        return false;
    return prefix.empty() || name.size() == prefix.size() || name[prefix.size()] == '.';
}

PrefixTable::PrefixTable() noexcept
{
    static const Data empty({});
    m_data = std::shared_ptr<const Data>(std::shared_ptr<const Data>(), &empty);
    m_view = &empty.view;
    m_find = scalar::find;
    m_impl = Implementation::scalar;
}

PrefixTable::PrefixTable(const std::vector<std::string>& prefixes)
    : PrefixTable(prefixes, default_implementation())
{
}

PrefixTable::PrefixTable(const std::vector<std::string>& prefixes, Implementation impl)
    : m_impl(impl)
{
    if (!is_supported(impl))
        throw std::invalid_argument("Cannot build a prefix table: implementation=" +
                                    std::string(implementation_name(impl)) +
                                    " is not supported by this build or CPU");
    auto data = std::make_shared<const Data>(prefixes);
    m_view = &data->view;
    m_data = std::move(data);
    m_find = kernel_for(impl);
}

std::size_t PrefixTable::size() const noexcept
{
    return m_data->prefixes.size();
}

std::string_view PrefixTable::prefix(std::size_t index) const noexcept
{
    return m_data->prefixes[index];
}

namespace {

std::vector<std::string> exclude_then_include(const std::vector<std::string>& include,
                                              const std::vector<std::string>& exclude)
{
    std::vector<std::string> all;
    all.reserve(exclude.size() + include.size());
    all.insert(all.end(), exclude.begin(), exclude.end());
    all.insert(all.end(), include.begin(), include.end());
    return all;
}

} // namespace

Filter::Filter() noexcept = default;

Filter::Filter(const std::vector<std::string>& include, const std::vector<std::string>& exclude)
    : Filter(include, exclude, default_implementation())
{
}

// Exclude prefixes come first: the table breaks ties between equal prefixes by their order, so
// the same prefix in both lists resolves to the exclude one.
Filter::Filter(const std::vector<std::string>& include, const std::vector<std::string>& exclude,
               Implementation impl)
    : m_table(exclude_then_include(include, exclude), impl), m_exclude_count(exclude.size()),
      m_include_count(include.size())
{
}

Filter::Decision Filter::decide(std::string_view module) const noexcept
{
    const std::optional<std::size_t> found = m_table.find(module);
    if (!found) {
        if (m_include_count == 0)
            return {true, Reason::default_in, 0};
        return {false, Reason::not_included, 0};
    }
    if (*found < m_exclude_count)
        return {false, Reason::excluded, *found};
    return {true, Reason::included, *found - m_exclude_count};
}

namespace reference {

std::optional<std::size_t> find(const std::vector<std::string>& prefixes,
                                std::string_view name) noexcept
{
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
        if (!matches(prefixes[i], name))
            continue;
        if (!best || normalize(prefixes[i]).size() > normalize(prefixes[*best]).size())
            best = i;
    }
    return best;
}

Filter::Decision decide(const std::vector<std::string>& include,
                        const std::vector<std::string>& exclude, std::string_view module) noexcept
{
    const std::optional<std::size_t> in = find(include, module);
    const std::optional<std::size_t> out = find(exclude, module);
    if (out && (!in || normalize(exclude[*out]).size() >= normalize(include[*in]).size()))
        return {false, Filter::Reason::excluded, *out};
    if (in)
        return {true, Filter::Reason::included, *in};
    if (include.empty())
        return {true, Filter::Reason::default_in, 0};
    return {false, Filter::Reason::not_included, 0};
}

} // namespace reference

} // namespace pyust::prefix
