#include "kv/store/reservation.h"

#include <algorithm>
#include <cstdio>

#include "base/system_memory.h"
#include "kv/store/chunked_rows.h"

namespace kvaudit {

namespace {

std::string Needs(int n_positions, uint64_t total, const std::string& what) {
  const uint64_t per_token = n_positions > 0 ? total / static_cast<uint64_t>(n_positions) : 0;
  return "KV cache for " + std::to_string(n_positions) + " tokens needs " + FormatBytes(total) + " (" + what + ", " +
         FormatBytes(per_token) + " per token)";
}

const char kHint[] = "; hint: lower --ctx (or the tokens to generate) or use a quantized --kv";

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double x = static_cast<double>(bytes);
  int u = 0;
  while (x >= 1024 && u < 6) {
    x /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", x, kUnits[u]);
  return buf;
}

Status CheckKvStorage(int n_positions, uint64_t total, uint64_t held, const std::string& what, uint64_t available,
                      uint64_t taken) {
  const uint64_t extra = total > held ? total - held : 0;
  if (extra == 0 || (taken <= available && extra <= available - taken)) return Status::Ok();
  std::string have = FormatBytes(available) + " of memory is available";
  if (taken > 0) have += ", " + FormatBytes(std::min(taken, available)) + " of it reserved by other KV caches";
  return BadInput(Needs(n_positions, total, what) + " and " + have + kHint);
}

Status ReserveKvStorage(int n_positions, uint64_t total, uint64_t held, const std::string& what,
                        const std::function<bool()>& allocate) {
  const uint64_t in_chunks = ChunkedRowsBytesHeld();
  KV_RETURN_IF_ERROR(
      CheckKvStorage(n_positions, total, held, what, AvailableMemoryBytes(), in_chunks > held ? in_chunks - held : 0));
  if (!allocate()) return BadInput(Needs(n_positions, total, what) + " and the allocation failed" + kHint);
  return Status::Ok();
}

}  // namespace kvaudit
