// Read-only memory map of a whole file. Move-only; unmaps on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lazyllm/result.h"

namespace lazyllm {

class MmapFile {
public:
    static Result<MmapFile> open(const std::string& path);

    MmapFile() = default;
    MmapFile(MmapFile&& other) noexcept;
    MmapFile& operator=(MmapFile&& other) noexcept;
    MmapFile(const MmapFile&) = delete;
    MmapFile& operator=(const MmapFile&) = delete;
    ~MmapFile();

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }
    // Drops the whole pages inside [offset, offset + size) from this process's memory
    // (madvise MADV_DONTNEED): for bytes that were read once (converted weights), so they stop
    // counting in the resident set. Reading them again faults them back in from the file.
    void release(size_t offset, size_t size) const;

private:
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    std::string path_;
};

}  // namespace lazyllm
