// sink.pyust.report's output file (see output_file.hpp).
#include "plugin/report/output_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/common/bt_util.hpp"

namespace pyust::plugin::report {

namespace {

bool is_special(mode_t mode) noexcept
{
    return S_ISCHR(mode) || S_ISFIFO(mode) || S_ISSOCK(mode);
}

[[noreturn]] void fail(const std::string& path, const std::string& reason)
{
    throw Error("Cannot open the output file: path=" + path + ", " + reason);
}

} // namespace

void OutputFile::Buffer::attach(int fd) noexcept
{
    m_fd = fd;
    setp(m_data.data(), m_data.data() + m_data.size());
}

bool OutputFile::Buffer::drain() noexcept
{
    const char* at = pbase();
    while (at < pptr()) {
        const ssize_t written = ::write(m_fd, at, static_cast<std::size_t>(pptr() - at));
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        at += written;
    }
    setp(m_data.data(), m_data.data() + m_data.size());
    return true;
}

OutputFile::Buffer::int_type OutputFile::Buffer::overflow(int_type c)
{
    if (!drain())
        return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
        *pptr() = traits_type::to_char_type(c);
        pbump(1);
    }
    return traits_type::not_eof(c);
}

int OutputFile::Buffer::sync()
{
    return drain() ? 0 : -1;
}

OutputFile::OutputFile(const std::string& path) : m_path(path), m_stream(&m_buffer)
{
    struct stat status {};
    const bool exists = ::lstat(path.c_str(), &status) == 0;
    if (exists && S_ISDIR(status.st_mode))
        fail(path, "reason=a directory");
    if (exists && S_ISLNK(status.st_mode)) {
        struct stat target {};
        if (::stat(path.c_str(), &target) == 0 && is_special(target.st_mode))
            fail(path, "reason=a symbolic link to a device or pipe (give the device's own path, "
                       "or no output for standard output)");
    }
    if (exists && is_special(status.st_mode)) {
        m_fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (m_fd < 0)
            fail(path, std::string("error=") + std::strerror(errno));
    } else if (exists && !S_ISREG(status.st_mode) && !S_ISLNK(status.st_mode)) {
        fail(path, "reason=not a regular file, a device or a pipe");
    } else {
        const std::size_t slash = path.rfind('/');
        const std::string directory =
            slash == std::string::npos ? std::string(".") : path.substr(0, slash + 1);
        const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
        std::string name =
            (slash == std::string::npos ? std::string() : directory) + "." + base + ".XXXXXX.tmp";
        std::vector<char> buffer(name.begin(), name.end());
        buffer.push_back('\0');
        m_fd = ::mkostemps(buffer.data(), 4, O_CLOEXEC);
        if (m_fd < 0)
            fail(path, std::string("error=") + std::strerror(errno));
        m_temporary.assign(buffer.data());
        // The mode a new file gets (mkostemps makes it 0600).
        const mode_t mask = ::umask(0);
        ::umask(mask);
        ::fchmod(m_fd, 0666 & ~mask);
    }
    m_buffer.attach(m_fd);
}

OutputFile::~OutputFile()
{
    if (!m_temporary.empty())
        ::unlink(m_temporary.c_str());
    if (m_fd >= 0)
        ::close(m_fd);
}

void OutputFile::commit()
{
    m_stream.flush();
    if (!m_stream)
        throw Error("Cannot write the report: path=" + m_path + ", error=" + std::strerror(errno));
    if (m_temporary.empty())
        return;
    if (::close(m_fd) != 0) {
        m_fd = -1;
        throw Error("Cannot write the report: path=" + m_path + ", error=" + std::strerror(errno));
    }
    m_fd = -1;
    if (::rename(m_temporary.c_str(), m_path.c_str()) != 0)
        throw Error("Cannot write the report: path=" + m_path + ", error=" + std::strerror(errno));
    m_temporary.clear();
}

} // namespace pyust::plugin::report
