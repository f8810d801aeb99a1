#include "kv/make_cache.h"

#include "kv/f32_cache.h"
#include "kv/store/kivi_store.h"
#include "kv/llamacpp/cache.h"
#include "kv/quant_cache.h"
#include "kv/store/row_store.h"

namespace kvaudit {

Expected<std::unique_ptr<KvCache>> MakeCache(const ModelConfig& config, const CacheConfig& cache_config,
                                             const KvCalibration* calib, int max_positions) {
  KV_RETURN_IF_ERROR(cache_config.Validate(config, calib != nullptr));
  if (cache_config.IsPlainF32()) return MakeF32Cache(config, max_positions);
  if (cache_config.attention() == AttentionMode::kLlamaCpp)
    return MakeLlamaCppCache(config, cache_config, max_positions);
  StoreFactory factory = [](const StoreSpec& spec) {
    return IsKivi(spec.format()) ? MakeKiviStore(spec) : MakeRowStore(spec);
  };
  return MakeQuantCache(config, cache_config, calib, max_positions, factory);
}

}  // namespace kvaudit
