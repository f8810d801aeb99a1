// KvCache::Reserve's common part: before a run, a cache reserves storage for the
// positions the run will use, and a machine that cannot hold it is one clear error (exit 2) here
// instead of an abort, or an OOM kill, deep inside the forward pass.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace kvaudit {

// "512 B", "2.0 MiB", "16.0 TiB" (binary units).
std::string FormatBytes(uint64_t bytes);

// A cache that holds `held` bytes now and will hold `total` for n_positions (`what` names it, e.g.
// "k=f32,v=f32: 8 layers × 2 KV heads") checks total − held against what this process can still
// obtain, then calls allocate(), whose false is an allocation failure. Storage that other caches of
// the process hold in chunks counts as taken: reservations are not resident until written, so the
// kernel's MemAvailable does not see them (an eval reserves its baseline and every configuration
// before the first token). Conservative for a cache reserved after others were filled.
Status ReserveKvStorage(int n_positions, uint64_t total, uint64_t held, const std::string& what,
                        const std::function<bool()>& allocate);

// The check alone, on given numbers (tests): ok iff taken + (total − held) <= available.
Status CheckKvStorage(int n_positions, uint64_t total, uint64_t held, const std::string& what, uint64_t available,
                      uint64_t taken);

}  // namespace kvaudit
