// kvaudit's own accounting of a cache configuration at a target context, sliding-window aware:
// what the configuration's caches hold per position (docs/formats.md: packed rows, scales,
// protections amortised over the context), layer by layer, times the positions each layer's
// attention reads (SpanCells: global layers the context, sliding layers min(context, window)).
// The figure budgets, "of f16" ratios, audit and recommend print (docs/deployment.md "KV memory").
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "decide/targets/kv_memory.h"
#include "kv/config/cache_config.h"
#include "kv/config/calibration.h"
#include "model/config.h"

namespace kvaudit {

// Layer l's bytes per position under `spec` at ctx ([n_layers]): the bytes per token of a cache
// holding layer l as the spec does and every other layer in plain f16, less that f16 rest (as
// mix_spec's PartBytesPerToken does for one tensor). A layer whose KV heads are configured apart
// is counted with head 0's configuration. calib: as MakeCache. Errors (exit 2): the spec does not
// fit the model.
Expected<std::vector<uint64_t>> LayerBytesPerPosition(const ModelConfig& c, const CacheConfig& spec, int ctx,
                                                      const KvCalibration* calib);

// SpanMemory of the spec at ctx. A model without sliding layers takes the cache's own bytes per
// token (every layer holds the context, so nothing is split): bytes_per_token equals
// MakeCache(spec)->bytes_per_token() there.
Expected<KvMemory> SpecMemory(const ModelConfig& c, const CacheConfig& spec, int ctx, const KvCalibration* calib);

}  // namespace kvaudit
