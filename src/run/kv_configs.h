// The cache configurations of a job, from its --kv flags: eval and probe compare each with a
// baseline, and the commands after them (audit, recommend, gate, serve) do the same. Every spec is
// parsed and checked against the model and repeats are refused before any compute, so a typo in
// the third --kv fails at once; the calibration text (--kv-calib) is read once and the calibration
// pass runs once, only if some configuration needs it. Caches are built on demand, at the size the job
// needs.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kv/config/cache_config.h"
#include "kv/config/calibration.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace kvaudit {

struct KvConfigOptions {
  std::string baseline = "k=f32,v=f32";      // the reference cache
  std::vector<std::string> kv;               // [n_configs] as given, compared with the baseline
  std::string kv_calib;                      // calibration text (file, folder or JSONL); "" = none
  std::string baseline_flag = "--baseline";  // the flag the baseline came from, for error messages
  // The one of kv that a policy's relative_to added (audit, recommend), named so in error messages
  // rather than as a --kv the user never gave; "" = none.
  std::string reference = {};
  // The context of the run these caches serve: the calibration pass applies the RoPE such a run
  // does (LongRoPE's factors: model/forward.h); 0 = the calibration's own window.
  int context = 0;
  const char* FlagOf(const std::string& arg) const {
    return !reference.empty() && arg == reference ? "relative_to" : "--kv";
  }
};

class KvConfigs {
 public:
  // Parses and validates the baseline and every configuration (BadInput naming the spec), refuses a
  // configuration given twice, reads the calibration text and, if a configuration needs it, calibrates.
  static Expected<KvConfigs> Prepare(const Model& model, const KvConfigOptions& options, ThreadPool& pool);

  size_t n_configs() const { return configs_.size() - 1; }
  // i = 0: the baseline; i = 1..n_configs: the configurations in command-line order.
  const CacheConfig& config(size_t i) const { return configs_[i]; }
  std::vector<std::string> config_specs() const;  // [n_configs] canonical
  // The calibration statistics; null when no configuration needs them.
  const std::shared_ptr<const KvCalibration>& calibration() const { return calib_; }
  // A cache for config(i) holding at most max_positions positions, with storage reserved for
  // reserve_positions of them (-1: all; KvCache::Reserve): a job reserves the positions it will
  // use, so a machine that cannot hold them is one error here, before any compute.
  Expected<std::unique_ptr<KvCache>> MakeCache(size_t i, int max_positions, int reserve_positions = -1) const;
  // [1 + n_configs] caches, baseline first, each reserved for max_positions.
  Expected<std::vector<std::unique_ptr<KvCache>>> MakeCaches(int max_positions) const;
  // What a resumable run's results depend on here: {"baseline", "configs", "calibration" (a hash
  // of the calibration text's content, present when --kv-calib is given)}.
  nlohmann::json Fingerprint() const;

 private:
  KvConfigs() = default;
  Status Calibrate(const Model& model, const std::string& text, ThreadPool& pool, int context);

  const Model* model_ = nullptr;
  std::vector<CacheConfig> configs_;  // [1 + n_configs], baseline first
  std::string calib_path_, calib_hash_;
  std::shared_ptr<const KvCalibration> calib_;  // null when no configuration needs one
};

// The baseline, then every --kv configuration, parsed (syntax only; KvConfigs::Prepare checks them
// against the model): for what a job decides before a model is loaded, e.g. the target it measures
// under (decide/targets/measure_target.h). Errors name the flag.
Expected<std::vector<CacheConfig>> ParseKvArguments(const KvConfigOptions& options);

// One cache (score, generate, info): its configuration and the cache; calibrated from calib_file when
// the configuration needs it; storage reserved as KvConfigs::MakeCache does (info: 0, generate: the
// positions it can reach). Errors (exit 2) name the spec or the file, or say that the machine
// cannot hold the reservation.
struct BuiltCache {
  CacheConfig config;
  std::shared_ptr<const KvCalibration> calib;  // kept alive for the cache
  std::unique_ptr<KvCache> cache;
};
Expected<BuiltCache> BuildCache(const Model& model, const std::string& spec, const std::string& calib_file,
                                int max_positions, ThreadPool& pool, int reserve_positions = -1);

}  // namespace kvaudit
