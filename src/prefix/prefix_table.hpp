// The module-name prefix table: which of a set of module-name prefixes (`numpy`, `pandas.io`,
// `myproj`) matches a Python module name, and the include/exclude Filter the hook builds on it.
// The hook asks once per code object, so a lookup must cost a few nanoseconds for the handful of
// prefixes users give. It runs on AVX2 (a SIMD pre-filter over 32 entries at a time, then a full
// compare of the few candidates) or on a scalar loop, the reference; which one is chosen once per
// process (see default_implementation()).
//
// Matching rules, shared by every implementation and by the naive reference:
//
// - A prefix P matches a module name N on a dotted boundary: P is empty, or N == P, or N starts
//   with P followed by '.'. `numpy` matches `numpy` and `numpy.core.multiarray`, never `numpyro`.
//   Prefixes and names are byte strings compared exactly (case-sensitive, no Unicode folding).
// - A prefix needs no trailing '.': one trailing '.' is dropped when a table is built, so `numpy.`
//   is the same entry as `numpy` (and `.` is the empty prefix).
// - The empty prefix matches every name, the empty name included.
// - When several prefixes match, the longest wins; among equal ones (the same string given twice),
//   the first given wins. Longest-match makes the answer independent of the order in which users
//   list prefixes (lists merged from the CLI, the environment and the API give the same verdicts)
//   and lets a specific rule refine a general one: include `numpy`, exclude `numpy.testing`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pyust::prefix {

namespace kernel {
struct TableView; // plain data shared with the implementations (prefix_kernels.hpp)
}

// The lookup implementations. The scalar one exists in every build and is the reference.
enum class Implementation { scalar, avx2 };

// The implementation's name as PYUST_SIMD spells it: "scalar" or "avx2". noexcept.
std::string_view implementation_name(Implementation impl) noexcept;

// Whether this build contains impl (Meson option `simd`) and this CPU can run it. noexcept.
bool is_supported(Implementation impl) noexcept;

// The implementation tables use unless told otherwise, chosen once per process on the first call:
// the environment variable PYUST_SIMD (`avx2` or `scalar`) when it is set and not empty; else AVX2
// when this build has it and the CPU supports it; else scalar. A build made with `-Dsimd=avx2`
// refuses to fall back silently: on a CPU without AVX2 it needs PYUST_SIMD=scalar.
// Thread-safe. Throws std::runtime_error, with a message that names the fix, when PYUST_SIMD
// names an unknown implementation or one this build or CPU lacks, or when a -Dsimd=avx2 build
// runs on a CPU without AVX2 and PYUST_SIMD is unset (every call then throws the same).
Implementation default_implementation();

// Whether prefix matches name under the rules above (prefix is normalized first). noexcept.
bool matches(std::string_view prefix, std::string_view name) noexcept;

// A table of prefixes, immutable once built. Copies share the table (cheap); concurrent lookups
// from any number of threads are safe.
class PrefixTable {
public:
    // An empty table, matching nothing, using the scalar implementation. noexcept.
    PrefixTable() noexcept;

    // Builds a table of prefixes, indexed as given, with default_implementation().
    // Throws what default_implementation() throws, std::bad_alloc, or std::length_error for more
    // than 2^31 - 1 prefixes.
    explicit PrefixTable(const std::vector<std::string>& prefixes);

    // Builds a table that uses impl, for tests and benchmarks that compare implementations.
    // Throws std::invalid_argument when !is_supported(impl), std::bad_alloc, or std::length_error
    // for more than 2^31 - 1 prefixes.
    PrefixTable(const std::vector<std::string>& prefixes, Implementation impl);

    // The index (into the list given to the constructor) of the longest prefix that matches
    // name, or nothing. name may be any byte string, may end right before an unmapped page, and
    // name.data() may be null when name is empty. noexcept.
    std::optional<std::size_t> find(std::string_view name) const noexcept
    {
        const std::int32_t index = m_find(*m_view, name.data(), name.size());
        if (index < 0)
            return std::nullopt;
        return static_cast<std::size_t>(index);
    }

    // The number of prefixes given to the constructor. noexcept.
    std::size_t size() const noexcept;

    // The prefix at index as the table holds it (normalized). Precondition: index < size().
    // noexcept.
    std::string_view prefix(std::size_t index) const noexcept;

    // The implementation this table's lookups run. noexcept.
    Implementation implementation() const noexcept { return m_impl; }

private:
    struct Data;
    using FindFn = std::int32_t (*)(const kernel::TableView&, const char*, std::size_t) noexcept;

    std::shared_ptr<const Data> m_data;
    const kernel::TableView* m_view; // inside *m_data
    FindFn m_find;
    Implementation m_impl;
};

// Decides whether the hook traces a module, from a list of prefixes to include and a list to
// exclude (rules: see the top of this file). The most specific (longest) matching prefix of
// either list decides; on a tie (the same prefix in both lists) exclude wins. With an empty
// include list every module is included unless excluded; with a non-empty one, a module that no
// prefix matches is not traced. One table lookup per decision.
class Filter {
public:
    // Why a module is traced or not.
    enum class Reason {
        included,     // an include prefix decided (index: into the include list)
        excluded,     // an exclude prefix decided (index: into the exclude list)
        default_in,   // the include list is empty and no exclude prefix matches
        not_included, // the include list is not empty and no prefix matches
    };
    struct Decision {
        bool is_traced;
        Reason reason;
        std::size_t index; // meaningful for included and excluded only (0 otherwise)
    };

    // A filter that traces everything. noexcept.
    Filter() noexcept;

    // Builds a filter with default_implementation(). Throws what default_implementation()
    // throws, std::bad_alloc, or std::length_error when the lists hold more than 2^31 - 1
    // prefixes in all.
    Filter(const std::vector<std::string>& include, const std::vector<std::string>& exclude);

    // Builds a filter that uses impl. Throws std::invalid_argument when !is_supported(impl),
    // std::bad_alloc, or std::length_error as above.
    Filter(const std::vector<std::string>& include, const std::vector<std::string>& exclude,
           Implementation impl);

    // The decision for a module name, and the rule that took it. noexcept.
    Decision decide(std::string_view module) const noexcept;

    // decide(module).is_traced. noexcept.
    bool is_traced(std::string_view module) const noexcept { return decide(module).is_traced; }

    // The implementation this filter's lookups run. noexcept.
    Implementation implementation() const noexcept { return m_table.implementation(); }

private:
    PrefixTable m_table; // the exclude list, then the include list
    std::size_t m_exclude_count = 0;
    std::size_t m_include_count = 0;
};

// The naive reference the tests, the fuzzer and the benchmark compare against: a plain loop over
// the prefixes, written straight from the rules, with no shared code beyond matches().
namespace reference {

// What PrefixTable(prefixes).find(name) must return. noexcept.
std::optional<std::size_t> find(const std::vector<std::string>& prefixes,
                                std::string_view name) noexcept;

// What Filter(include, exclude).decide(module) must return. noexcept.
Filter::Decision decide(const std::vector<std::string>& include,
                        const std::vector<std::string>& exclude, std::string_view module) noexcept;

} // namespace reference

} // namespace pyust::prefix
