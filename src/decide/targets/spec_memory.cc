#include "decide/targets/spec_memory.h"

#include "kv/make_cache.h"

namespace kvaudit {
namespace {

// Every key of a resolved (layer, head) configuration, so that an override reproduces it alone.
KvSettings AllKeys(const HeadConfig& h) {
  KvSettings s;
  s.k = h.k, s.v = h.v, s.scale = h.scale, s.scale_by = h.scale_by;
  if (h.group > 0) s.group = h.group;
  if (h.recent >= 0) s.recent = h.recent;
  s.sink = h.sink, s.rot = h.rot, s.outliers = h.outliers, s.pre_rope = h.pre_rope;
  return s;
}

Expected<uint64_t> BytesPerToken(const ModelConfig& c, const CacheConfig& spec, int ctx, const KvCalibration* calib) {
  KV_ASSIGN_OR_RETURN(auto cache, MakeCache(c, spec, calib, ctx));
  return cache->bytes_per_token();
}

// `total` spread over the layers (the first ones take the remainder), for a model whose layers all
// hold the context: only the sum is a measured figure.
std::vector<uint64_t> Spread(uint64_t total, int n_layers) {
  std::vector<uint64_t> out(n_layers, total / n_layers);  // [n_layers]
  for (uint64_t i = 0; i < total % n_layers; ++i) ++out[i];
  return out;
}

}  // namespace

Expected<std::vector<uint64_t>> LayerBytesPerPosition(const ModelConfig& c, const CacheConfig& spec, int ctx,
                                                      const KvCalibration* calib) {
  KvSettings f16;
  f16.k = f16.v = KvFormat::kF16;
  const uint64_t f16_layer = 2ull * 2 * c.n_kv_heads * c.head_dim;  // K and V, 2 bytes per element
  const uint64_t rest = f16_layer * (c.n_layers - 1);
  std::vector<uint64_t> out;  // [n_layers]
  for (int l = 0; l < c.n_layers; ++l) {
    const CacheConfig one =
        CacheConfig::Uniform(f16, spec.attention_written()).WithLayers({l, l}, AllKeys(spec.ForHead(c, l, 0)));
    KV_ASSIGN_OR_RETURN(const uint64_t bytes, BytesPerToken(c, one, ctx, calib));
    KV_CHECK(bytes >= rest);
    out.push_back(bytes - rest);
  }
  return out;
}

Expected<KvMemory> SpecMemory(const ModelConfig& c, const CacheConfig& spec, int ctx, const KvCalibration* calib) {
  if (c.n_sliding_layers() == 0) {
    KV_ASSIGN_OR_RETURN(const uint64_t whole, BytesPerToken(c, spec, ctx, calib));
    return SpanMemory(Spread(whole, c.n_layers), c, ctx);
  }
  KV_ASSIGN_OR_RETURN(const std::vector<uint64_t> layers, LayerBytesPerPosition(c, spec, ctx, calib));
  return SpanMemory(layers, c, ctx);
}

}  // namespace kvaudit
