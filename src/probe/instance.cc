#include "probe/instance.h"

#include <algorithm>

namespace kvaudit {

std::vector<int> DefaultProbeLengths(int n_ctx, int reserve) {
  std::vector<int> out;
  const int cap = n_ctx - reserve;
  for (int len = 512; len <= 4096 && cap >= kMinProbeLength; len *= 2) {
    out.push_back(std::min(len, cap));
    if (len >= cap) break;
  }
  return out;
}

std::string ProbeId(std::string_view family, std::string_view variant, int length, int depth, int index) {
  std::string id = std::string(family) + "/" + std::string(variant) + "/L" + std::to_string(length);
  if (depth >= 0) id += "/d" + std::to_string(depth);
  return id + "/i" + std::to_string(index);
}

ProbeInstance NewProbeInstance(std::string_view family, std::string_view variant, int length, int depth, int index) {
  ProbeInstance p;
  p.family = family;
  p.variant = variant;
  p.id = ProbeId(family, variant, length, depth, index);
  p.length = length;
  p.depth = depth;
  return p;
}

Status ValidateProbeGrid(std::string_view family, const std::vector<int>& lengths, const std::vector<int>& depths,
                         int per_cell) {
  const std::string f(family);
  if (lengths.empty()) return BadInput(f + " probes: no lengths; hint: pass --lengths, e.g. 512,1024");
  for (int len : lengths) {
    if (len < kMinProbeLength) {
      return BadInput(f + " probes: length " + std::to_string(len) + " is below the minimum of " +
                      std::to_string(kMinProbeLength) + " tokens; hint: use --lengths of at least " +
                      std::to_string(kMinProbeLength));
    }
  }
  for (int d : depths) {
    if (d < 0 || d > 100) {
      return BadInput(f + " probes: depth " + std::to_string(d) + "% is out of range; hint: --depths are 0..100");
    }
  }
  if (per_cell < 1) return BadInput(f + " probes: per-cell count must be at least 1; hint: --per-cell 1");
  return Status::Ok();
}

Status ValidateProbeVariant(std::string_view family, std::string_view variant, const std::vector<std::string>& known) {
  std::string list;
  for (const auto& k : known) {
    if (k == variant) return Status::Ok();
    list += (list.empty() ? "" : ", ") + k;
  }
  return BadInput(std::string(family) + " probes: unknown variant \"" + std::string(variant) + "\"; hint: one of " +
                  list);
}

uint64_t InstanceSeed(uint64_t seed, std::string_view instance_id) {
  // FNV-1a over the id, mixed with the seed by SplitMix64's finalizer (Steele et al. 2014).
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : instance_id) h = (h ^ c) * 1099511628211ull;
  uint64_t z = h ^ (seed + 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t ProbeRng::Below(uint64_t n) {
  // Reject the top partial block so every residue is equally likely.
  const uint64_t limit = ~0ull - (~0ull % n + 1) % n;
  uint64_t x;
  do x = gen_();
  while (x > limit);
  return x % n;
}

int ProbeRng::Range(int lo, int hi) { return lo + static_cast<int>(Below(static_cast<uint64_t>(hi - lo) + 1)); }

}  // namespace kvaudit
