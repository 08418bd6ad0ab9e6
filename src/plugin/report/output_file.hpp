// The file sink.pyust.report writes its report to (its output parameter), written so that nobody
// who can write in its directory can make the sink write anywhere else: the report goes to a new
// temporary file beside it (O_EXCL, written through its descriptor, never reopened by name) that
// is renamed over the path once complete. A rename replaces a symbolic or hard link planted at
// the path, never its target, and a failed run leaves the previous file as it was. A device, a
// pipe or a socket that is the path itself (/dev/null, a named pipe) is written in place, opened
// without following a link; a link to one is refused (the path may have been planted; give the
// device's own path, or no output for standard output).
#pragma once

#include <array>
#include <ostream>
#include <streambuf>
#include <string>

namespace pyust::plugin::report {

class OutputFile {
public:
    // Opens the output for path. Throws Error naming the path and why it cannot be written
    // (a directory, a link to a device, a directory that does not exist or refuses a new file),
    // std::bad_alloc.
    explicit OutputFile(const std::string& path);
    // Removes the temporary file when commit() did not rename it. noexcept.
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    // Where to write the report; its errors set badbit (errno says why). noexcept.
    std::ostream& stream() noexcept { return m_stream; }

    // Writes what is buffered and puts the file in place. Throws Error (a write or the rename
    // failed), std::bad_alloc.
    void commit();

private:
    // A stream buffer over a file descriptor, so that the file is never opened by name again.
    class Buffer : public std::streambuf {
    public:
        void attach(int fd) noexcept;

    protected:
        int_type overflow(int_type c) override;
        int sync() override;

    private:
        bool drain() noexcept;

        int m_fd = -1;
        std::array<char, 65536> m_data{};
    };

    std::string m_path;
    std::string m_temporary; // empty once renamed, or when the path is written in place
    int m_fd = -1;
    Buffer m_buffer;
    std::ostream m_stream;
};

} // namespace pyust::plugin::report
