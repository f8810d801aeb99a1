// Per-layer K/V mixes as kvaudit cache specs (docs/decision.md "Search"): what one tensor's
// candidate storage is ("q4_0,rot=1"), which K and V candidates can share a layer, and the compact
// spec of a whole assignment. The search (decide/search/mix_search.h) works on these; `recommend` verifies
// the rendered specs end to end.
//
// What the grammar can express per layer (docs/formats.md, src/kv/config/cache_config.cc): every
// key but `engine` may be set per layer (and per KV head), but the keys other than k and v belong
// to the (layer, head), not to one tensor: `layers=3:k=q4_0,v=q8_0,rot=1` rotates both, and a
// modifier applies to each tensor of the layer that is quantized (kv/store/row_store.cc,
// kv/quant_cache.cc). So a K candidate and a V candidate can share a layer only when the settings
// of one leave the other's storage as it was measured (ShareLayer); `engine` is whole-cache.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/config/cache_config.h"
#include "kv/config/calibration.h"
#include "model/config.h"

namespace kvaudit {

// One way to store one tensor (K or V) of a layer: a format and the modifiers that go with it.
struct Candidate {
  KvFormat format = KvFormat::kF16;
  KvSettings mods;                         // the modifiers written (never k or v)
  std::optional<AttentionMode> attention;  // `engine=` when the text names it (whole-cache)
  std::string text;                        // canonical: the format, then the keys in grammar order
};

// "q4_0", "q4_0,rot=1", "fp8_e4m3,scale=calib", "q8_0,engine=llama.cpp": a format name, then
// key=value modifiers of the --kv grammar. Errors (exit 2) name the text and give a hint; a
// key-only modifier (outliers, prerope) on a V candidate is an error, since it would act on the
// layer's K instead.
Expected<Candidate> ParseCandidate(std::string_view text, char tensor);

// What decides how one tensor of one (layer, head) is stored, as the stores read a HeadConfig:
// the format, and for a quantized format its protections and codec settings. Settings that do
// not act on the tensor are left at their zero values, so two policies store a tensor alike
// exactly when their TensorStorage compare equal (over-strict for a few no-op combinations, e.g.
// sinks of a KIVI tensor: then a pair is refused that would have worked, never the reverse).
struct TensorStorage {
  KvFormat format = KvFormat::kF16;
  int sink = 0, recent = 0, group = 0, outliers = 0;
  bool rotated = false, pre_rope = false;
  Fp8ScaleMode scale = Fp8ScaleMode::kUnit;
  Fp8ScaleBy scale_by = Fp8ScaleBy::kLayer;
  bool operator==(const TensorStorage&) const = default;
};
TensorStorage StorageOf(const HeadConfig& p, char tensor, AttentionMode attention);
// The storage a candidate was measured with: its tensor quantized so, the other one at f16.
TensorStorage StorageOf(const Candidate& c, char tensor, AttentionMode attention);

// The settings of one layer (k=, v= and modifiers) under which K is stored as `k` and V as `v`
// were measured, or nullopt when no such settings exist (the two candidates set a shared modifier
// differently on two quantized tensors, or one's defaults change the other: a KIVI K makes the
// layer's recent window 128 for a quantized V too).
std::optional<KvSettings> ShareLayer(const Candidate& k, const Candidate& v, AttentionMode attention);

// ",engine=llama.cpp" for llama.cpp's attention emulation, "" for the native engine: the whole-
// cache key a spec carries in its default segment.
std::string AttentionSuffix(AttentionMode attention);

struct LayerCandidates {
  const Candidate* k = nullptr;
  const Candidate* v = nullptr;
};

// The compact spec of a per-layer assignment: the default segment is the one (tried: the most
// common K with the most common V candidate, then each layer's own pair in layer order) that
// gives the shortest spec; every run of consecutive layers that needs the same keys beyond it is
// one `layers=a-b:` segment, K and V keys together; `engine=` goes in the default segment. The
// result stores exactly these storages per (layer, tensor) (checked: KV_CHECK), and its spec()
// parses back to it. Every layer's pair must ShareLayer. `sliding` ([n_layers], or empty: no
// sliding layers) gives each layer's attention kind: where the keys beyond the default depend on the
// kind alone, `layers=sliding:` / `layers=global:` segments are tried too (the shortest spec wins).
CacheConfig RenderMixSpec(const std::vector<LayerCandidates>& layers, AttentionMode attention,
                          const std::vector<bool>& sliding = {});

// Bytes per token (kvaudit's accounting, docs/formats.md) that storing `tensor` of `layer` as `c`
// adds to a cache whose other tensors are f16: bytes_per_token of that spec minus the f16 rest,
// i.e. ⌈this part's bytes at ctx / ctx⌉; a sliding-window layer's part holds min(ctx, window)
// positions (decide/targets/spec_memory.h). calib: needed by scale=calib and outliers= candidates
// (their bytes do not depend on its values). Under the candidate's engine (native when it names
// none; a format's bytes are the same in both). Errors (exit 2): the candidate does not fit the
// model (CacheConfig::Validate).
Expected<uint64_t> PartBytesPerToken(const ModelConfig& config, const Candidate& c, int layer, char tensor, int ctx,
                                     const KvCalibration* calib);

}  // namespace kvaudit
