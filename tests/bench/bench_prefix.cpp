// The prefix table's benchmark: ns per lookup for 1, 4, 16 and 64 prefixes over realistic module
// names, for the AVX2 kernel, the scalar kernel and the naive loop one would write without the
// table, printed as a table. The names are what `sys.modules` holds after importing json, re,
// asyncio, email, http.client and some forty other stdlib modules (CPython 3.11), plus the
// modules of numpy, pandas and a project of one's own, the case issue 3 starts from.
// Usage: bench_prefix [rounds] (default 15; each figure is the fastest round: on a shared machine
// the minimum is the figure other processes disturb least).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prefix/prefix_table.hpp"

namespace {

using pyust::prefix::Implementation;
using pyust::prefix::PrefixTable;

// The data, bin-packed by hand.
// clang-format off
const char* const stdlib_names[] = {
    "_abc", "_ast", "_asyncio", "_bisect", "_blake2", "_bz2", "_codecs", "_collections",
    "_collections_abc", "_compat_pickle", "_compression", "_contextvars", "_csv", "_ctypes",
    "_datetime", "_decimal", "_elementtree", "_frozen_importlib", "_frozen_importlib_external",
    "_functools", "_hashlib", "_heapq", "_imp", "_io", "_json", "_locale", "_lzma", "_markupbase",
    "_opcode", "_operator", "_pickle", "_posixsubprocess", "_random", "_sha512", "_signal",
    "_sitebuiltins", "_socket", "_sqlite3", "_sre", "_ssl", "_stat", "_string", "_struct",
    "_thread", "_typing", "_uuid", "_warnings", "_weakref", "_weakrefset", "abc", "argparse",
    "array", "ast", "asyncio", "asyncio.base_events", "asyncio.base_futures",
    "asyncio.base_subprocess", "asyncio.base_tasks", "asyncio.constants", "asyncio.coroutines",
    "asyncio.events", "asyncio.exceptions", "asyncio.format_helpers", "asyncio.futures",
    "asyncio.locks", "asyncio.log", "asyncio.mixins", "asyncio.protocols", "asyncio.queues",
    "asyncio.runners", "asyncio.selector_events", "asyncio.sslproto", "asyncio.staggered",
    "asyncio.streams", "asyncio.subprocess", "asyncio.taskgroups", "asyncio.tasks",
    "asyncio.threads", "asyncio.timeouts", "asyncio.transports", "asyncio.trsock",
    "asyncio.unix_events", "atexit", "base64", "binascii", "bisect", "builtins", "bz2", "calendar",
    "codecs", "collections", "collections.abc", "concurrent", "concurrent.futures",
    "concurrent.futures._base", "configparser", "contextlib", "contextvars", "copy", "copyreg",
    "csv", "ctypes", "ctypes._endian", "dataclasses", "datetime", "decimal", "difflib", "dis",
    "email", "email._encoded_words", "email._header_value_parser", "email._parseaddr",
    "email._policybase", "email.base64mime", "email.charset", "email.contentmanager",
    "email.encoders", "email.errors", "email.feedparser", "email.header", "email.headerregistry",
    "email.iterators", "email.message", "email.mime", "email.mime.base", "email.mime.nonmultipart",
    "email.mime.text", "email.parser", "email.policy", "email.quoprimime", "email.utils",
    "encodings", "encodings.aliases", "encodings.utf_8", "enum", "errno", "fcntl", "fnmatch",
    "fractions", "functools", "genericpath", "gettext", "gzip", "hashlib", "heapq", "html",
    "html.entities", "html.parser", "http", "http.client", "importlib", "importlib._abc",
    "importlib._bootstrap", "importlib._bootstrap_external", "importlib.abc", "importlib.machinery",
    "importlib.metadata", "importlib.metadata._adapters", "importlib.metadata._collections",
    "importlib.metadata._functools", "importlib.metadata._itertools", "importlib.metadata._meta",
    "importlib.metadata._text", "importlib.readers", "importlib.resources",
    "importlib.resources._adapters", "importlib.resources._common",
    "importlib.resources._itertools", "importlib.resources._legacy", "importlib.resources.abc",
    "importlib.resources.readers", "importlib.util", "inspect", "io", "ipaddress", "itertools",
    "json", "json.decoder", "json.encoder", "json.scanner", "keyword", "linecache", "locale",
    "logging", "lzma", "marshal", "math", "ntpath", "numbers", "opcode", "operator", "os",
    "os.path", "pathlib", "pickle", "platform", "posix", "posixpath", "pprint", "pyexpat",
    "pyexpat.errors", "pyexpat.model", "quopri", "random", "re", "re._casefix", "re._compiler",
    "re._constants", "re._parser", "reprlib", "select", "selectors", "shutil", "signal", "site",
    "socket", "sqlite3", "sqlite3.dbapi2", "ssl", "stat", "string", "struct", "subprocess", "sys",
    "tempfile", "textwrap", "threading", "time", "token", "tokenize", "traceback", "types",
    "typing", "typing.io", "typing.re", "unittest", "unittest.case", "unittest.loader",
    "unittest.main", "unittest.result", "unittest.runner", "unittest.signals", "unittest.suite",
    "unittest.util", "urllib", "urllib.error", "urllib.parse", "urllib.request", "urllib.response",
    "uuid", "warnings", "weakref", "xml", "xml.etree", "xml.etree.ElementPath",
    "xml.etree.ElementTree", "zipfile", "zipimport", "zlib"
};

const char* const project_names[] = {
    "numpy", "numpy.core", "numpy.core.multiarray", "numpy.core.numeric", "numpy.core.fromnumeric",
    "numpy.core._methods", "numpy.core.shape_base", "numpy.lib", "numpy.lib.function_base",
    "numpy.lib.stride_tricks", "numpy.linalg", "numpy.linalg.linalg", "numpy.fft", "numpy.random",
    "numpy.random._pickle", "numpy.ma", "numpy.ma.core", "numpy.testing", "numpy.testing._private",
    "pandas", "pandas.core", "pandas.core.frame", "pandas.core.series", "pandas.core.generic",
    "pandas.core.indexes.base", "pandas.core.groupby.groupby", "pandas.core.internals.managers",
    "pandas.core.arrays.categorical", "pandas.core.dtypes.common", "pandas.io", "pandas.io.parsers",
    "pandas.io.formats.format", "pandas.io.common", "pandas._libs", "pandas.util._decorators",
    "pandas.plotting", "myproj", "myproj.app", "myproj.models", "myproj.models.user",
    "myproj.views", "myproj.tasks", "myproj.utils.text", "myproj.db.session", "myproj.vendor.six"
};

// The include lists a user might give: a project, the usual data stack, then more and more.
const char* const prefix_pool[] = {
    "myproj", "numpy", "pandas", "scipy", "json", "email.mime", "asyncio", "http", "requests",
    "urllib3", "sqlalchemy", "django", "flask", "matplotlib", "sklearn", "torch", "collections",
    "encodings", "importlib", "concurrent", "xml.etree", "logging", "unittest", "ctypes", "typing",
    "dataclasses", "tensorflow", "jax", "numba", "pyarrow", "polars", "dask", "xarray",
    "statsmodels", "seaborn", "plotly", "bokeh", "tornado", "aiohttp", "fastapi", "starlette",
    "pydantic", "celery", "redis", "boto3", "botocore", "s3transfer", "google.cloud", "grpc",
    "protobuf", "yaml", "toml", "click", "rich", "pytest", "hypothesis", "attr", "attrs", "cython",
    "setuptools", "pip", "wheel", "packaging", "certifi"
};
// clang-format on

using Clock = std::chrono::steady_clock;

// Where the benchmark loops store their sums, so that the compiler keeps every lookup.
volatile std::size_t sink;

// The loop one writes without the table: every prefix, starts-with plus the dotted boundary,
// keeping the longest. Prefixes are given normalized (no trailing dot).
std::optional<std::size_t> naive_find(const std::vector<std::string>& prefixes,
                                      std::string_view name) noexcept
{
    std::optional<std::size_t> best;
    std::size_t best_length = 0;
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
        const std::string& prefix = prefixes[i];
        const bool starts_with = name.substr(0, prefix.size()) == prefix;
        if (starts_with && (name.size() == prefix.size() || name[prefix.size()] == '.') &&
            (!best || prefix.size() > best_length)) {
            best = i;
            best_length = prefix.size();
        }
    }
    return best;
}

// The ns that passes of lookup over all names take.
template <typename Lookup>
double time_passes(const std::vector<std::string_view>& names, std::size_t passes, Lookup& lookup)
{
    const auto start = Clock::now();
    std::size_t sum = 0;
    for (std::size_t pass = 0; pass < passes; ++pass)
        for (const std::string_view name : names)
            sum += lookup(name).value_or(1000);
    sink = sum;
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

// The fewest ns per lookup over rounds of passes of lookup over all names; a round repeats the
// passes for about 20 ms.
template <typename Lookup>
double ns_per_lookup(const std::vector<std::string_view>& names, int rounds, Lookup&& lookup)
{
    std::size_t passes = 1;
    while (time_passes(names, passes, lookup) < 20e6)
        passes *= 2;
    double best = time_passes(names, passes, lookup);
    for (int round = 1; round < rounds; ++round)
        best = std::min(best, time_passes(names, passes, lookup));
    return best / static_cast<double>(passes * names.size());
}

} // namespace

int main(int argc, char** argv)
{
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
    std::vector<std::string_view> names(std::begin(stdlib_names), std::end(stdlib_names));
    names.insert(names.end(), std::begin(project_names), std::end(project_names));
    const bool has_avx2 = pyust::prefix::is_supported(Implementation::avx2);

    std::printf("prefix table: ns per lookup, fastest of %d rounds, %zu module names\n", rounds,
                names.size());
    std::printf("%8s %8s %10s %10s %10s %12s\n", "prefixes", "matched", "naive", "scalar", "avx2",
                "naive/avx2");
    for (const std::size_t count : {1, 4, 16, 64}) {
        const std::vector<std::string> prefixes(std::begin(prefix_pool),
                                                std::begin(prefix_pool) + count);
        const PrefixTable scalar(prefixes, Implementation::scalar);
        std::size_t matched = 0;
        for (const std::string_view name : names) {
            const auto expected = naive_find(prefixes, name);
            if (scalar.find(name) != expected) {
                std::fprintf(stderr, "Cannot benchmark: scalar disagrees with naive: name=%.*s\n",
                             static_cast<int>(name.size()), name.data());
                return 1;
            }
            matched += expected.has_value();
        }
        const double naive = ns_per_lookup(
            names, rounds, [&](std::string_view name) { return naive_find(prefixes, name); });
        const double scalar_ns =
            ns_per_lookup(names, rounds, [&](std::string_view name) { return scalar.find(name); });
        if (!has_avx2) {
            std::printf("%8zu %8zu %10.2f %10.2f %10s %12s\n", count, matched, naive, scalar_ns,
                        "n/a", "n/a");
            continue;
        }
        const PrefixTable avx2(prefixes, Implementation::avx2);
        for (const std::string_view name : names) {
            if (avx2.find(name) != scalar.find(name)) {
                std::fprintf(stderr, "Cannot benchmark: avx2 disagrees with scalar: name=%.*s\n",
                             static_cast<int>(name.size()), name.data());
                return 1;
            }
        }
        const double avx2_ns =
            ns_per_lookup(names, rounds, [&](std::string_view name) { return avx2.find(name); });
        std::printf("%8zu %8zu %10.2f %10.2f %10.2f %11.1fx\n", count, matched, naive, scalar_ns,
                    avx2_ns, naive / avx2_ns);
    }
    if (!has_avx2)
        std::printf("(this CPU or build has no AVX2 kernel)\n");
    return 0;
}
