#include "base/system_memory.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace kvaudit {

namespace {

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();

// The first integer in a file ("max" or a missing file: kUnknown).
uint64_t ReadNumber(const char* path) {
  std::ifstream in(path);
  uint64_t x = 0;
  return in >> x ? x : kUnknown;
}

// What is left under a limit, or kUnknown when there is no limit.
uint64_t Headroom(const char* limit_path, const char* usage_path) {
  const uint64_t limit = ReadNumber(limit_path), usage = ReadNumber(usage_path);
  // cgroup v1 reports "no limit" as a huge page-rounded number; anything above 2^60 is none.
  if (limit == kUnknown || usage == kUnknown || limit > (uint64_t{1} << 60)) return kUnknown;
  return limit > usage ? limit - usage : 0;
}

uint64_t MemInfoAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  uint64_t total = 0;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    uint64_t kib = 0;
    if (!(s >> key >> kib)) continue;
    if (key == "MemAvailable:" || key == "SwapFree:") {
      total += kib * 1024;
      found = true;
    }
  }
  return found ? total : kUnknown;
}

}  // namespace

uint64_t AvailableMemoryBytes() {
  return std::min(
      {MemInfoAvailable(), Headroom("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
       Headroom("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")});
}

}  // namespace kvaudit
