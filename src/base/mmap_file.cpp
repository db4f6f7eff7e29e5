#include "base/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace lazyllm {

Result<MmapFile> MmapFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ErrorCode code = errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
        return make_error(code, "cannot open '{}': {}", path, std::strerror(errno));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        return make_error(ErrorCode::kIo, "cannot stat '{}': {}", path, std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(ErrorCode::kIo, "'{}' is not a regular file", path);
    }
    MmapFile f;
    f.path_ = path;
    f.size_ = static_cast<size_t>(st.st_size);
    if (f.size_ > 0) {
        void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            ::close(fd);
            return make_error(ErrorCode::kIo, "cannot mmap '{}': {}", path, std::strerror(e));
        }
        f.data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    return f;
}

void MmapFile::release(size_t offset, size_t size) const {
    if (data_ == nullptr || offset >= size_) return;
    size = std::min(size, size_ - offset);
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(data_) + offset;
    const uintptr_t first = (begin + page - 1) / page * page;  // whole pages only
    const uintptr_t last = (begin + size) / page * page;
    if (last > first) {
        // Advice only: on failure the pages simply stay resident.
        ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
    }
}

MmapFile::MmapFile(MmapFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MmapFile& MmapFile::operator=(MmapFile&& other) noexcept {
    if (this != &other) {
        if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        path_ = std::move(other.path_);
    }
    return *this;
}

MmapFile::~MmapFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace lazyllm
