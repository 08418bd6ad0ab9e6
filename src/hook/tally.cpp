#include "tally.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

#include "hook.hpp"

namespace pyust::hook {
namespace {

EventTally own_tally;
std::string tally_directory; // empty until tally_into()

// A new zeroed EventTally in a new file of directory (0600, named after the
// process, unique even when pids repeat), or nullptr with errno set.
EventTally* map_new_file(const std::string& directory) noexcept
{
    std::string path;
    try {
        path = directory + "/tally-" + std::to_string(getpid()) + "-XXXXXX";
    } catch (...) {
        errno = ENOMEM;
        return nullptr;
    }
    const int fd = mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0)
        return nullptr;
    void* memory = MAP_FAILED;
    if (ftruncate(fd, sizeof(EventTally)) == 0)
        memory = mmap(nullptr, sizeof(EventTally), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int error = errno;
    close(fd);
    if (memory == MAP_FAILED) {
        unlink(path.c_str());
        errno = error;
        return nullptr;
    }
    return new (memory) EventTally{};
}

void release(EventTally* tally) noexcept
{
    if (tally != &own_tally)
        munmap(tally, sizeof(EventTally));
}

} // namespace

EventTally* g_tally = &own_tally;

void tally_into(const std::string& directory)
{
    EventTally* tally = map_new_file(directory);
    if (tally == nullptr)
        throw TracerError("cannot keep the event count in " + directory + ": " +
                          std::strerror(errno));
    tally->events = g_tally->events;
    tally->records.store(g_tally->records.load(std::memory_order_relaxed),
                         std::memory_order_relaxed);
    EventTally* previous = g_tally;
    g_tally = tally;
    release(previous);
    tally_directory = directory;
}

void tally_after_fork_child() noexcept
{
    if (tally_directory.empty())
        return;
    // The parent's file is the parent's: counting on in it from here would
    // race with the parent and count the child's events twice.
    EventTally* tally = map_new_file(tally_directory);
    if (tally == nullptr) {
        own_tally.events = 0;
        own_tally.records.store(0, std::memory_order_relaxed);
        tally = &own_tally;
        tally_directory.clear();
    }
    EventTally* previous = g_tally;
    g_tally = tally;
    release(previous);
}

} // namespace pyust::hook
