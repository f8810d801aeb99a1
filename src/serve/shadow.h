// Shadow fidelity monitoring (`kvaudit serve --shadow-rate R`, docs/serve.md): a sampled fraction
// of completed requests is re-run, after its answer was handed to the HTTP thread, through a
// full-precision cache (k=f32,v=f32, the worker's own) teacher-forced on exactly the tokens served
// (prompt + generated). The served side: the logits each generated token was sampled from
// (recorded while generating: a copy per step) and, for the prompt, the served cache's prefill run
// again with every position's logits (CacheGenerator::PrefillLogits: the same computation, so the
// same numbers, and no cost on the answer's path; keeping them during the first prefill would add
// the output projection of every prompt row, ~25% on the bundled model, to the answer's latency).
// Every position ≥ 1 of both parts is compared, served against shadow, with
// eval's arithmetic (eval/fidelity_metrics.h BaseRow: KL(shadow ‖ served), top-1 agreement, NLL of
// the served token), into ShadowMetrics (exported on /metrics) and, optionally, one JSONL line per
// request.
//
// Sampling is deterministic and needs no seed: the i-th completed request (0-based, in the order
// workers finish them) is shadowed iff floor((i + 1)·R) > floor(i·R), so exactly floor(n·R) of the
// first n are, evenly spaced (R = 1: every one; R = 0.25: the 4th, 8th, ...).
#pragma once

#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "run/cache_generator.h"
#include "serve/shadow_metrics.h"

namespace kvaudit::serve {

struct ShadowOptions {
  double rate = 0;       // --shadow-rate, in [0, 1]
  std::string log_path;  // --shadow-log, "" = none
  int ctx = 0;           // bucket edges (eval's DefaultBuckets(ctx))
};

// The compared positions: served and shadow logits [tokens - 1, vocab] (row i predicts
// tokens[i + 1]), per position its context length i + 1, KLD, ΔNLL, top-1.
std::vector<ShadowMetrics::Position> ComparePositions(std::span<const float> served, std::span<const float> shadow,
                                                      std::span<const int32_t> tokens, size_t vocab);

class ShadowMonitor {
 public:
  // BadInput when the log cannot be opened for appending.
  static Expected<std::unique_ptr<ShadowMonitor>> Open(const ShadowOptions& options);

  // Whether the next completed request is shadowed (advances the counter).
  bool Sample();

  // What the worker measured of the request itself (the JSONL log's reference for the cost).
  struct Served {
    std::string id;  // the response's id
    size_t prompt_tokens = 0;
    double seconds = 0;      // wall time of the served run on the worker
    double cpu_seconds = 0;  // process CPU over it
  };
  // Runs the served prefill again on `served` (the worker's generator) and the shadow on `shadow`
  // (its f32 one), compares and records. tokens: prompt (the first prompt_tokens) + generated;
  // step_logits: the generated tokens' logits (CompletionHooks), [tokens - prompt_tokens, vocab].
  void Run(CacheGenerator& served, CacheGenerator& shadow, std::span<const int32_t> tokens,
           std::span<const float> step_logits, size_t vocab, const Served& request);

  const ShadowMetrics& metrics() const { return metrics_; }

 private:
  explicit ShadowMonitor(const ShadowOptions& o) : o_(o), metrics_(o.ctx) {}
  void Log(const Served& request, size_t tokens, const std::vector<ShadowMetrics::Position>& positions, double seconds,
           double cpu_seconds);

  const ShadowOptions o_;
  ShadowMetrics metrics_;
  std::atomic<uint64_t> completed_{0};
  std::mutex log_mu_;
  std::ofstream log_;
};

// Process CPU seconds so far (user + system, every thread: the worker's compute pool included).
double ProcessCpuSeconds();

}  // namespace kvaudit::serve
