// Decode speed of this engine under each cache configuration (`audit --bench`; docs/audit.md "Speed
// beside fidelity"): tokens per second of single-token decode steps at a stated depth, measured
// side by side. This engine's speed on this machine, not a deployment's: llama.cpp, vLLM and the
// others run other kernels (BENCHMARKS.md compares ours with llama.cpp's on the same files).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "run/kv_configs.h"

namespace kvaudit {

struct DecodeSpeedOptions {
  int depth = 0;    // positions in the cache before the first timed step
  int tokens = 32;  // decode steps per round
  int rounds = 3;   // the median of these is reported
};

struct DecodeSpeed {
  std::string spec;            // canonical (the baseline first)
  double tokens_per_s = 0;     // median over rounds
  std::vector<double> rounds;  // tokens/s of each round
};

// Seconds on the steady clock, and the median of timings (an even count: the mean of the middle
// two): what decode speed is measured and summarised with (here and in bench/decode_kv_bench.cc).
double SteadySeconds();
double MedianOf(std::vector<double> v);

// The baseline and every configuration of `configs`, each with its own cache, prefilled once with
// `depth` tokens of `ids` (needs depth + 1 + rounds * tokens of them), then `rounds` rounds of
// `tokens` decode steps, round-robin over the configurations so load from other processes hits
// them alike. Wall time is not deterministic: the numbers go in a run block, never in a
// comparison of results.
Expected<std::vector<DecodeSpeed>> MeasureDecodeSpeed(const Model& model, ThreadPool& pool, const KvConfigs& configs,
                                                      const std::vector<int32_t>& ids, const DecodeSpeedOptions& o);

}  // namespace kvaudit
