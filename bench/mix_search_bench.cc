// The mix search (decide/search/mix_search.h) on 70B-shaped problems: 80 layers x (K, V) = 160 parts x
// 8 choices. Two byte patterns:
//   random:  bytes uniform in [1, 2048] per choice (no common factor: g = 1, the widest table);
//   formats: Llama-3-70B's KV shape (8 KV heads x head_dim 128) with f16, bf16, q8_0, q5_1, q5_0,
//            q4_1, q4_0, iq4_nl: their real bytes per token (multiples of 64).
// Costs are random in [0, 1). Per shape: the median wall time of `reps` searches, the front's size,
// and the process's peak RSS after all runs; also the time to build the problem and to render one
// point's spec.
//   mix_search_bench [reps] [seed]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "decide/search/mix_search.h"

using namespace kvaudit;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

uint64_t SplitMix(uint64_t& s) {  // splitmix64 (tests/support/random_rows.h)
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

const char* const kFormats[] = {"f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"};
// Bytes per token of one tensor of one layer at 8 KV heads x 128: 1024 elements x bits / 8.
const uint64_t kFormatBytes[] = {2048, 2048, 1088, 768, 704, 640, 576, 576};

std::vector<Part> Parts(bool random_bytes, uint64_t seed) {
  std::vector<Part> parts;
  for (int l = 0; l < 80; ++l) {
    for (char t : {'k', 'v'}) {
      Part p{l, t, {}};
      for (int c = 0; c < 8; ++c) {
        const double cost = c == 0 ? 0.0 : static_cast<double>(SplitMix(seed) >> 11) * 0x1p-53;
        const uint64_t bytes = random_bytes ? 1 + SplitMix(seed) % 2048 : kFormatBytes[c];
        p.choices.push_back({kFormats[c], cost, bytes});
      }
      parts.push_back(std::move(p));
    }
  }
  return parts;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double TimeMedian(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = Now();
    f();
    t.push_back(Now() - t0);
  }
  return Median(t);
}

// The per-layer table's width before the search drops dominated pairs: Σ_parts (max − min) / g,
// g the GCD of every choice's bytes above its part's minimum.
uint64_t BinsBound(const std::vector<Part>& parts) {
  uint64_t g = 0, span = 0;
  for (const Part& p : parts) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const PartChoice& c : p.choices) lo = std::min(lo, c.bytes_per_token), hi = std::max(hi, c.bytes_per_token);
    for (const PartChoice& c : p.choices) g = std::gcd(g, c.bytes_per_token - lo);
    span += hi - lo;
  }
  return span / std::max<uint64_t>(g, 1) + 1;
}

void Run(const char* name, bool random_bytes, int reps, uint64_t seed) {
  const std::vector<Part> parts = Parts(random_bytes, seed);
  std::printf("%-8s per-layer table at most %llu byte bins x 80 layers\n", name,
              static_cast<unsigned long long>(BinsBound(parts)));
  MixProblem m = MixProblem::FromPartsOrDie(parts);
  const double build = TimeMedian(reps, [&] { m = MixProblem::FromPartsOrDie(parts); });
  std::printf("%-8s build %.2f ms\n", name, build * 1e3);
  for (MixShape shape : {MixShape::kUniform, MixShape::kFirstLast, MixShape::kPerLayer}) {
    MixFront front;
    const double t = TimeMedian(reps, [&] { front = SearchFront(m, shape); });
    const MixPoint& mid = front[front.size() / 2];
    std::string spec;
    const double render = TimeMedian(reps, [&] { spec = m.Spec(mid); });
    std::printf(
        "%-8s %-10s %9.2f ms  front %6zu points  (%llu..%llu B/token)  spec of the middle point %.2f ms, %zu chars\n",
        name, std::string(MixShapeName(shape)).c_str(), t * 1e3, front.size(),
        static_cast<unsigned long long>(front.front().bytes_per_token),
        static_cast<unsigned long long>(front.back().bytes_per_token), render * 1e3, spec.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  std::printf("mix_search_bench: 80 layers x (K, V), 8 choices per part, median of %d runs, seed %llu\n", reps,
              static_cast<unsigned long long>(seed));
  Run("random", true, reps, seed);
  Run("formats", false, reps, seed);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("peak RSS %.1f MiB\n", ru.ru_maxrss / 1024.0);
  return 0;
}
