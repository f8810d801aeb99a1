// Builds the KV cache a configuration describes: the f32 reference, the generic quantized cache (row
// stores and KIVI stores, mixed per layer/head), or the llama.cpp attention emulation.
#pragma once

#include <memory>

#include "kv/config/cache_config.h"
#include "kv/config/calibration.h"
#include "model/config.h"
#include "model/kv_cache.h"

namespace kvaudit {

// Validates the configuration against the model first (clean error, exit 2, before any compute).
// calib may be null when the configuration needs no calibration.
Expected<std::unique_ptr<KvCache>> MakeCache(const ModelConfig& config, const CacheConfig& cache_config,
                                             const KvCalibration* calib, int max_positions);

}  // namespace kvaudit
