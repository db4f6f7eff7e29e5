#include "base/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lazyllm {

Result<std::string> read_whole_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return make_error(ErrorCode::kNotFound, "'{}' does not exist", path);
        if (errno == EISDIR) {
            return make_error(ErrorCode::kInvalidArgument, "'{}' is a directory, not a file", path);
        }
        return make_error(ErrorCode::kIo, "cannot open '{}': {}", path, std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        ::close(fd);
        return make_error(ErrorCode::kInvalidArgument, "'{}' is a directory, not a file", path);
    }
    std::string out;
    if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            return make_error(ErrorCode::kIo, "cannot read '{}': {}", path, std::strerror(e));
        }
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

}  // namespace lazyllm
