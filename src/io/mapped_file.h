// Read-only memory mapping of a whole file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace kvaudit {

class MappedFile {
 public:
  // Error (exit 2) naming the path if it cannot be opened; an empty file maps to size 0.
  static Expected<std::shared_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace kvaudit
