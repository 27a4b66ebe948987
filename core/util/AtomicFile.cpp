#include "util/AtomicFile.h"

#include "util/Error.h"

#include <cerrno>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace dedloc {

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target) : m_target(std::move(target))
{
    m_temp = m_target;
    m_temp += ".tmp-" + std::to_string(::getpid());
    m_fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (m_fd < 0)
        throw Error(systemErrorText("cannot create " + m_temp.string(), errno));
}

AtomicFileWriter::~AtomicFileWriter()
{
    if (m_fd >= 0)
        ::close(m_fd);
    if (!m_committed) {
        std::error_code ignored;
        std::filesystem::remove(m_temp, ignored);
    }
}

void AtomicFileWriter::fail(const std::string &what, int errnoValue)
{
    const int saved = errnoValue;
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
    std::error_code ignored;
    std::filesystem::remove(m_temp, ignored);
    std::string hint;
    if (saved == ENOSPC || saved == EDQUOT || saved == EFBIG)
        hint = " (the disk or quota is full; " + m_target.filename().string() + " was left as it was)";
    throw Error(systemErrorText(what + " " + m_temp.string(), saved) + hint);
}

void AtomicFileWriter::write(const void *data, std::size_t bytes)
{
    const auto *p = static_cast<const char *>(data);
    while (bytes > 0) {
        const ssize_t n = ::write(m_fd, p, bytes);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail("cannot write", errno);
        }
        p += n;
        bytes -= static_cast<std::size_t>(n);
        m_written += static_cast<std::size_t>(n);
    }
}

void AtomicFileWriter::commit()
{
    if (::fsync(m_fd) != 0)
        fail("cannot flush", errno);
    if (::close(m_fd) != 0) {
        m_fd = -1;
        fail("cannot close", errno);
    }
    m_fd = -1;
    if (::rename(m_temp.c_str(), m_target.c_str()) != 0)
        fail("cannot rename to " + m_target.string() + ":", errno);
    m_committed = true;
    const auto dir = m_target.has_parent_path() ? m_target.parent_path() : std::filesystem::path(".");
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

void writeFileAtomically(const std::filesystem::path &target, const std::string &content)
{
    AtomicFileWriter w(target);
    w.write(content.data(), content.size());
    w.commit();
}

std::string readWholeFile(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(systemErrorText("cannot read " + path.string(), errno));
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace dedloc
