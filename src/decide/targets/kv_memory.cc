#include "decide/targets/kv_memory.h"

#include <algorithm>

#include "base/status.h"

namespace kvaudit {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

uint64_t RoundUp(uint64_t n, uint64_t to) { return to <= 1 ? n : (n + to - 1) / to * to; }

KvMemory Finish(uint64_t per_token, uint64_t at_target, std::string layout) {
  return {per_token, at_target, static_cast<double>(at_target) / kGiB, std::move(layout)};
}

std::string Num(uint64_t n) { return std::to_string(n); }

}  // namespace

int ElementBytes(KvFormat f) {
  switch (f) {
    case KvFormat::kF32: return 4;
    case KvFormat::kF16:
    case KvFormat::kBF16: return 2;
    case KvFormat::kFp8E4M3:
    case KvFormat::kFp8E5M2: return 1;
    default: KV_CHECK_MSG(false, "not a float or fp8 format"); return 0;
  }
}

KvMemory GgmlCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, int cell_padding) {
  // One cell holds, per layer, n_kv_heads rows of head_dim elements for K and for V. kvaudit's
  // codecs for llama.cpp's types write ggml's own blocks (docs/formats.md), so their row sizes are
  // ggml_row_size: q8_0 34 B, q4_0 18 B, q4_1 20 B, q5_0 22 B, q5_1 24 B, iq4_nl 18 B per 32.
  uint64_t per_token = 0;
  for (const LayerKv& l : layers) {
    KV_CHECK(HasLlamaCppType(l.k) && HasLlamaCppType(l.v));
    per_token +=
        c.n_kv_heads * (Format(l.k).codec().row_bytes(c.head_dim, {}) + Format(l.v).codec().row_bytes(c.head_dim, {}));
  }
  const uint64_t cells = RoundUp(static_cast<uint64_t>(ctx), static_cast<uint64_t>(cell_padding));
  return Finish(per_token, per_token * cells,
                Num(layers.size()) + " layers x " + std::to_string(c.n_kv_heads) + " KV heads x (K + V rows of " +
                    std::to_string(c.head_dim) + " elements in ggml blocks) = " + Num(per_token) + " B per cell; " +
                    Num(cells) + " cells (" + std::to_string(ctx) + " rounded up to a multiple of " +
                    std::to_string(cell_padding) + ")");
}

KvMemory PagedCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, int block_tokens,
                          uint64_t scale_bytes) {
  uint64_t per_token = 0;
  for (const LayerKv& l : layers) {
    per_token += static_cast<uint64_t>(c.n_kv_heads) * c.head_dim * (ElementBytes(l.k) + ElementBytes(l.v));
  }
  const uint64_t tokens = RoundUp(static_cast<uint64_t>(ctx), static_cast<uint64_t>(block_tokens));
  return Finish(per_token, per_token * tokens + scale_bytes,
                Num(layers.size()) + " layers x " + std::to_string(c.n_kv_heads) + " KV heads x " +
                    std::to_string(c.head_dim) + " elements x (K + V element bytes) = " + Num(per_token) +
                    " B per token; " + Num(tokens) + " tokens (blocks of " + std::to_string(block_tokens) + ") + " +
                    Num(scale_bytes) + " B of scales");
}

KvMemory HfCacheMemory(const HfCacheShape& s, const ModelConfig& c, int ctx) {
  const uint64_t rows = 2ull * c.n_layers * c.n_kv_heads;  // K and V rows of one token
  const uint64_t full_row = static_cast<uint64_t>(c.head_dim) * s.full_bytes;
  if (s.nbits == 0) {
    return Finish(rows * full_row, rows * full_row * ctx,
                  Num(rows) + " rows (layers x KV heads x K,V) x " + Num(full_row) + " B per token; no quantization");
  }
  // Codes: head_dim × nbits bits; scale + zero-point: 2 + 2 bytes per group of `group` elements
  // (transformers keeps them in the model dtype: cache_utils.py QuantoQuantizedLayer/HQQQuantizedLayer).
  const uint64_t packed_row = (static_cast<uint64_t>(c.head_dim) * s.nbits + 7) / 8 + (c.head_dim / s.group) * 4ull;
  const uint64_t residual = static_cast<uint64_t>(std::min(s.residual, ctx));
  const uint64_t at = rows * (packed_row * (ctx - residual) + full_row * residual);
  return Finish(rows * packed_row, at,
                Num(rows) + " rows x " + Num(packed_row) + " B per token (" + std::to_string(s.nbits) +
                    "-bit codes + 4 B scale/zero per " + std::to_string(s.group) + " elements); " + Num(residual) +
                    " residual tokens x " + Num(rows * full_row) + " B in full precision");
}

}  // namespace kvaudit
