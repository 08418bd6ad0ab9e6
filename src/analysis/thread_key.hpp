// A thread of a traced process, as LTTng's vpid and vtid contexts name it: the key of
// every per-thread table of the analysis and of the plugin's components; and the trace's time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace pyust::analysis {

// Nanoseconds from the trace clock's origin.
using Timestamp = std::int64_t;

// A thread of a traced process, as LTTng's vpid and vtid contexts name it.
struct ThreadKey {
    std::int64_t pid = 0;
    std::int64_t tid = 0;

    bool operator==(const ThreadKey& other) const noexcept
    {
        return pid == other.pid && tid == other.tid;
    }
    bool operator<(const ThreadKey& other) const noexcept
    {
        return pid != other.pid ? pid < other.pid : tid < other.tid;
    }
};

struct ThreadKeyHash {
    std::size_t operator()(const ThreadKey& key) const noexcept
    {
        return std::hash<std::int64_t>()(key.pid * 1000003 ^ key.tid);
    }
};

} // namespace pyust::analysis
