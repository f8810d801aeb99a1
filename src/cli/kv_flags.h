// --kv / --kv-calib, shared by every subcommand that runs a cache configuration.
#pragma once

#include <memory>
#include <string>

#include "base/thread_pool.h"
#include "kv/policy/cache_policy.h"
#include "kv/calibrate.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace CLI { class App; }

namespace kvaudit::cli {

struct KvFlags {
  std::string kv = "k=f32,v=f32";
  std::string kv_calib;  // text file for calibration (fp8 scale=calib, outliers=N)
  void Add(CLI::App& app);
};

// Parses and validates the policy, runs the calibration pass if the policy needs one, and builds
// the cache with max_positions as its hard limit, reserving storage for reserve_positions of them
// (-1: all; the positions the command will use, KvCache::Reserve). Errors (exit 2) name the spec or
// file, or say that the machine cannot hold the reservation.
struct BuiltCache {
  CachePolicy policy;
  std::unique_ptr<KvCalibration> calib;
  std::unique_ptr<KvCache> cache;
};
Expected<BuiltCache> BuildCache(const Model& model, const std::string& spec, const std::string& calib_file,
                                int max_positions, ThreadPool& pool, int reserve_positions = -1);

}  // namespace kvaudit::cli
