#include "hook/tally.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hook/hook.hpp"

namespace pyust::hook {
namespace {

EventTally own_tally;
std::string tally_directory; // empty until tally_into()

// A new zeroed EventTally in a new file of directory (0600, named after the
// process, unique even when pids repeat), or nullptr with errno set. Only in a
// directory of the run's: not a symbolic link, this process's user's, 0700. A
// process can outlive its run, and once the run's directory is gone another
// user may make one of that name (in /tmp): there, or where a link there
// points, the process creates nothing.
EventTally* map_new_file(const std::string& directory) noexcept
{
    const int dir = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return nullptr;
    struct stat info;
    if (fstat(dir, &info) != 0 || info.st_uid != geteuid() || (info.st_mode & 077) != 0) {
        close(dir);
        errno = EPERM;
        return nullptr;
    }
    std::string name;
    int fd = -1;
    errno = EEXIST;
    for (unsigned attempt = 0; fd < 0 && errno == EEXIST && attempt < 10000; ++attempt) {
        try {
            name = "tally-" + std::to_string(getpid()) + "-" + std::to_string(attempt);
        } catch (...) {
            errno = ENOMEM;
            break;
        }
        fd = openat(dir, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
    void* memory = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, sizeof(EventTally)) == 0)
        memory = mmap(nullptr, sizeof(EventTally), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int error = errno;
    if (fd >= 0) {
        close(fd);
        if (memory == MAP_FAILED)
            unlinkat(dir, name.c_str(), 0);
    }
    close(dir);
    if (memory == MAP_FAILED) {
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
    tally->start_waited_ns.store(g_tally->start_waited_ns.load());
    tally->start_lost_ns.store(g_tally->start_lost_ns.load());
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
