// How much memory this process can still obtain, for checks that must fail with a clear message
// before a large allocation rather than be OOM-killed while filling it. Linux overcommits: a
// malloc of untouched memory succeeds far beyond what the machine holds, so only a comparison
// with what the kernel reports tells a run that it cannot be held.
#pragma once

#include <cstdint>

namespace kvaudit {

// MemAvailable + SwapFree (/proc/meminfo), bounded by the memory limit of the process's cgroup
// (v2 memory.max − memory.current, v1 memory.limit_in_bytes − memory.usage_in_bytes, as seen at
// /sys/fs/cgroup: a container's own). UINT64_MAX when none of these can be read.
uint64_t AvailableMemoryBytes();

}  // namespace kvaudit
