#include "decide/targets/kv_memory.h"

#include <algorithm>

#include "base/status.h"

namespace kvaudit {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Num(uint64_t n) { return std::to_string(n); }

// How the global layers' cells were counted: "4096 rounded up to a multiple of 256".
std::string GlobalText(const CellRule& rule, int ctx) {
  if (rule.round_to <= 1) return "";
  return std::to_string(ctx) + " rounded up to a multiple of " + std::to_string(rule.round_to);
}

std::string CellsNote(const CellRule& rule, const ModelConfig& c, int ctx) {
  std::string note = GlobalText(rule, ctx);
  const std::string sliding = SlidingCellsText(rule, c, ctx);
  if (!sliding.empty()) note += (note.empty() ? "" : "; ") + sliding;
  return note.empty() ? "" : " (" + note + ")";
}

}  // namespace

int KvMemory::LayersOf(bool sliding) const {
  return static_cast<int>(
      std::count_if(layers.begin(), layers.end(), [&](const LayerMemory& l) { return l.sliding == sliding; }));
}

uint64_t KvMemory::BytesOf(bool sliding) const {
  uint64_t sum = 0;
  for (const LayerMemory& l : layers) sum += l.sliding == sliding ? l.cells * l.bytes_per_cell : 0;
  return sum;
}

uint64_t KvMemory::KBytesOf(bool sliding) const {
  uint64_t sum = 0;
  for (const LayerMemory& l : layers) sum += l.sliding == sliding ? l.cells * l.k_bytes_per_cell : 0;
  return sum;
}

std::string KvMemory::CellsText() const {
  // Runs of equal (kind, cells) in the order they first appear, global layers first.
  std::vector<std::pair<LayerMemory, int>> groups;  // [n_groups] (kind and cells, layers)
  for (bool sliding : {false, true}) {
    for (const LayerMemory& l : layers) {
      if (l.sliding != sliding) continue;
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first.sliding == l.sliding && g.first.cells == l.cells; });
      if (it == groups.end())
        groups.push_back({l, 1});
      else
        ++it->second;
    }
  }
  const bool any_sliding = LayersOf(true) > 0;
  std::string s;
  for (const auto& [l, n] : groups) {
    const std::string kind = !any_sliding ? "" : l.sliding ? "sliding " : "global ";
    s += (s.empty() ? "" : " + ") + std::to_string(n) + " " + kind + (n == 1 ? "layer" : "layers") + " x " +
         Num(l.cells) + " cells";
  }
  return s;
}

KvMemory SumLayers(const std::vector<uint64_t>& bytes_per_cell, const CellRule& rule, const ModelConfig& c, int ctx,
                   uint64_t extra_bytes, const std::string& how, const std::vector<uint64_t>& k_bytes_per_cell) {
  KV_CHECK(static_cast<int>(bytes_per_cell.size()) == c.n_layers && ctx >= 1);
  KV_CHECK(k_bytes_per_cell.empty() || k_bytes_per_cell.size() == bytes_per_cell.size());
  KvMemory m;
  m.extra_bytes = extra_bytes;
  uint64_t total = extra_bytes;
  for (int l = 0; l < c.n_layers; ++l) {
    const uint64_t k = k_bytes_per_cell.empty() ? 0 : k_bytes_per_cell[l];
    m.layers.push_back({c.is_sliding(l), bytes_per_cell[l], k, LayerCells(rule, c, l, ctx)});
    total += m.layers.back().cells * bytes_per_cell[l];
  }
  m.bytes_at_target = total;
  m.bytes_per_token = (total + ctx - 1) / ctx;
  m.gib_at_target = static_cast<double>(total) / kGiB;
  m.layout = m.CellsText() + CellsNote(rule, c, ctx) + "; " + how;
  return m;
}

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

KvMemory GgmlCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, const CellRule& rule) {
  // One cell holds, per layer, n_kv_heads rows of head_dim elements for K and for V. kvaudit's
  // codecs for llama.cpp's types write ggml's own blocks (docs/formats.md), so their row sizes are
  // ggml_row_size: q8_0 34 B, q4_0 18 B, q4_1 20 B, q5_0 22 B, q5_1 24 B, iq4_nl 18 B per 32.
  std::vector<uint64_t> per_cell, k_per_cell;  // [n_layers]
  uint64_t sum = 0;
  for (const LayerKv& l : layers) {
    KV_CHECK(Format(l.k).codec != nullptr && Format(l.v).codec != nullptr);  // row formats (ik_llama.cpp: q8_KV)
    const uint64_t k = static_cast<uint64_t>(c.n_kv_heads) * Format(l.k).codec().row_bytes(c.head_dim, {});
    const uint64_t v = static_cast<uint64_t>(c.n_kv_heads) * Format(l.v).codec().row_bytes(c.head_dim, {});
    per_cell.push_back(k + v), k_per_cell.push_back(k);
    sum += k + v;
  }
  return SumLayers(per_cell, rule, c, ctx, 0,
                   Num(layers.size()) + " layers x " + std::to_string(c.n_kv_heads) + " KV heads x (K + V rows of " +
                       std::to_string(c.head_dim) + " elements in ggml blocks) = " + Num(sum) + " B per cell",
                   k_per_cell);
}

KvMemory PagedCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, const CellRule& rule,
                          uint64_t scale_bytes) {
  // One token's row of one KV head in the engine's dtype: head_dim elements, with the scales a
  // quantized row carries inside (nvfp4: an e4m3 byte per 16; per-token-head: an f32), which the
  // engines' page layouts hold per token too (kv/formats/*.h).
  auto row = [&](KvFormat f) { return Format(f).codec().row_bytes(c.head_dim, {}); };
  std::vector<uint64_t> per_token, k_per_token;  // [n_layers]
  uint64_t sum = 0;
  for (const LayerKv& l : layers) {
    per_token.push_back(static_cast<uint64_t>(c.n_kv_heads) * (row(l.k) + row(l.v)));
    k_per_token.push_back(static_cast<uint64_t>(c.n_kv_heads) * row(l.k));
    sum += per_token.back();
  }
  return SumLayers(per_token, rule, c, ctx, scale_bytes,
                   Num(layers.size()) + " layers x " + std::to_string(c.n_kv_heads) + " KV heads x (K + V rows of " +
                       std::to_string(c.head_dim) + " elements with their scales) = " + Num(sum) + " B per token; + " +
                       Num(scale_bytes) + " B of per-layer scales",
                   k_per_token);
}

KvMemory HfCacheMemory(const HfCacheShape& s, const ModelConfig& c, int ctx) {
  const uint64_t rows = 2ull * c.n_kv_heads;  // K and V rows of one token in one layer
  const uint64_t full_row = static_cast<uint64_t>(c.head_dim) * s.full_bytes;
  if (s.nbits == 0) {
    return SumLayers(std::vector<uint64_t>(c.n_layers, rows * full_row), HfCells(true), c, ctx, 0,
                     Num(rows * c.n_layers) + " rows (layers x KV heads x K,V) x " + Num(full_row) +
                         " B per token; no quantization");
  }
  // Codes: head_dim × nbits bits; scale + zero-point: 2 + 2 bytes per group of `group` elements
  // (transformers keeps them in the model dtype: cache_utils.py QuantoQuantizedLayer/HQQQuantizedLayer).
  // QuantizedCache has no sliding-window layer: every layer keeps every token.
  const uint64_t packed_row = (static_cast<uint64_t>(c.head_dim) * s.nbits + 7) / 8 + (c.head_dim / s.group) * 4ull;
  const uint64_t residual = static_cast<uint64_t>(std::min(s.residual, ctx));
  const uint64_t residual_extra = rows * c.n_layers * residual * (full_row - std::min(full_row, packed_row));
  return SumLayers(std::vector<uint64_t>(c.n_layers, rows * packed_row), HfCells(false), c, ctx, residual_extra,
                   Num(rows * c.n_layers) + " rows x " + Num(packed_row) + " B per token (" + std::to_string(s.nbits) +
                       "-bit codes + 4 B scale/zero per " + std::to_string(s.group) + " elements); " + Num(residual) +
                       " residual tokens x " + Num(rows * c.n_layers * full_row) + " B in full precision");
}

KvMemory SpanMemory(const std::vector<uint64_t>& bytes_per_position, const ModelConfig& c, int ctx) {
  uint64_t sum = 0;
  for (uint64_t b : bytes_per_position) sum += b;
  return SumLayers(bytes_per_position, SpanCells(), c, ctx, 0,
                   "kvaudit's accounting: " + Num(sum) + " B per position over all layers");
}

uint64_t F16BytesPerTokenAt(const ModelConfig& c, int ctx) {
  const uint64_t per_layer = 2ull * 2 * c.n_kv_heads * c.head_dim;  // K and V, 2 bytes per element
  return SpanMemory(std::vector<uint64_t>(c.n_layers, per_layer), c, ctx).bytes_per_token;
}

}  // namespace kvaudit
