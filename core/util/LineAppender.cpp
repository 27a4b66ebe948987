#include "util/LineAppender.h"

#include "util/Error.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace dedloc {

LineAppender::~LineAppender()
{
    close();
}

void LineAppender::open(const std::filesystem::path &file, const std::string &purpose)
{
    close();
    m_path = file;
    m_lastError.clear();
    m_lastErrno = 0;
    if (file.empty())
        return;
    if (file.has_parent_path()) {
        std::error_code ec;
        std::filesystem::create_directories(file.parent_path(), ec);
        if (ec)
            throw Error("cannot create " + file.parent_path().string() + " for " + purpose + ": " + ec.message());
    }
    // 0666 less the umask, as fopen(..., "a") creates files.
    m_fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (m_fd < 0)
        throw Error(systemErrorText("cannot open " + file.string() + " for " + purpose, errno));
}

void LineAppender::close()
{
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
}

bool LineAppender::append(std::string_view line)
{
    if (m_fd < 0)
        return true;
    // The size before the line, to cut a partial line off again (only a regular file can be cut).
    struct stat before {};
    const bool regular = ::fstat(m_fd, &before) == 0 && S_ISREG(before.st_mode);
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::write(m_fd, line.data() + done, line.size() - done);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        const int e = n < 0 ? errno : EIO;
        if (done > 0 && regular)
            (void)::ftruncate(m_fd, before.st_size);
        m_lastErrno = e;
        m_lastError = systemErrorText("cannot append to " + m_path.string(), e);
        return false;
    }
    m_lastErrno = 0;
    m_lastError.clear();
    return true;
}

} // namespace dedloc
