// ik_llama.cpp: llama.cpp's types plus other types for the first N and last M layers of K and of V
// (PR #1599: -ctk-first/-ctk-last/-ctv-first/-ctv-last TYPE,N), and its own Hadamard transforms
// (-khad PR #1033/#1034, -vhad PR #1527) instead of mainline's automatic rotation. Sources at
// ikawrakow/ik_llama.cpp @8337e4cd: common/common.cpp (flags, kv_cache_type_from_str),
// common/common.h (flash_attn on by default), src/llama.cpp (per-layer types, the -khad/-vhad
// gates, n_ctx padded to 256 with flash attention), ikawrakow/ik_llama.cpp:src/llama-model.h hadamard_size,
// ggml/src/iqk/iqk_cpu_ops.cpp fast_ht (orthonormal Walsh-Hadamard).
#include <algorithm>
#include <optional>

#include "decide/targets/targets.h"

namespace kvaudit {
namespace {

// One tensor kind (K or V) over the layers as ik_llama.cpp sets it: a default type, another for
// the first n_first layers, another for the last n_last.
struct FirstLast {
  KvFormat base = KvFormat::kF16;
  KvFormat first = KvFormat::kF16, last = KvFormat::kF16;
  int n_first = 0, n_last = 0;
};

std::optional<FirstLast> FitFirstLast(const std::vector<KvFormat>& seq) {
  std::vector<std::pair<KvFormat, int>> runs;
  for (KvFormat f : seq) {
    if (runs.empty() || runs.back().first != f) runs.push_back({f, 0});
    ++runs.back().second;
  }
  FirstLast fl;
  if (runs.size() == 1) {
    fl.base = runs[0].first;
  } else if (runs.size() == 2) {  // the longer run is the default (the second on a tie)
    const bool first_is_base = runs[0].second > runs[1].second;
    fl.base = runs[first_is_base ? 0 : 1].first;
    if (first_is_base)
      fl.last = runs[1].first, fl.n_last = runs[1].second;
    else
      fl.first = runs[0].first, fl.n_first = runs[0].second;
  } else if (runs.size() == 3) {
    fl.base = runs[1].first;
    fl.first = runs[0].first, fl.n_first = runs[0].second;
    fl.last = runs[2].first, fl.n_last = runs[2].second;
  } else {
    return std::nullopt;
  }
  return fl;
}

std::vector<KvFormat> Column(const TargetView& v, bool is_k) {
  std::vector<KvFormat> out;
  for (const LayerKv& l : v.layers) out.push_back(is_k ? l.k : l.v);
  return out;
}

// ik_llama.cpp's Hadamard block for a head (llama-model.h hadamard_size): head_dim when it is a
// power of two, else the largest of 512..64 dividing it, else 0.
int IkBlock(int head_dim) {
  if ((head_dim & (head_dim - 1)) == 0) return head_dim;
  for (int b = 512; b >= 64; b /= 2) {
    if (head_dim % b == 0) return b;
  }
  return 0;
}

// The block the spec rotates a quantized tensor with: native rot=1 the whole head_dim; under
// engine=llama.cpp mainline's blocks (K: largest power of two >= 64 dividing head_dim, V: 64).
int SpecBlock(const TargetView& v, bool is_k) {
  const RotationMode rot = v.heads.front().rot;
  if (v.attention == AttentionMode::kNative) return rot == RotationMode::kOn ? v.head_dim : 0;
  if (rot == RotationMode::kOff || v.head_dim % 64 != 0) return 0;
  if (!is_k) return 64;
  int n = 64;
  while (v.head_dim % (2 * n) == 0) n *= 2;
  return n;
}

// The types -ctk takes (common/common.cpp kv_cache_type_from_str): llama.cpp's and ik_llama.cpp's
// own q8_KV (one f32 scale per row of head_dim: kv/formats/q8_kv.h). -ctv takes q8_KV too, but V is
// stored one row per token across all KV heads while the flash-attention reader expects one per
// head, so a q8_KV V cache is not offered (unverified for GQA at @8337e4cd).
std::vector<KvFormat> IkTypes(bool is_k) {
  std::vector<KvFormat> t = LlamaCppCacheTypes();
  if (is_k) t.push_back(KvFormat::kQ8Kv);
  return t;
}

bool AnyQuantized(const std::vector<KvFormat>& col) {
  return std::any_of(col.begin(), col.end(), [](KvFormat f) { return !IsFullPrecision(f); });
}

// -khad/-vhad rotate every layer's tensor with IkBlock, and only when the default type of that
// tensor is quantized (src/llama.cpp: "there is no point in Hadamard transforms with not quantized
// K-cache"). "" when the spec's rotation of this tensor kind is expressible.
std::string RotationMismatch(const TargetView& v, bool is_k, const FirstLast& fl) {
  const std::vector<KvFormat> col = Column(v, is_k);
  const int want = SpecBlock(v, is_k);
  if (want == 0 || !AnyQuantized(col)) return "";
  const std::string name = is_k ? "K" : "V";
  if (IsFullPrecision(fl.base)) {
    return "ik_llama.cpp turns -" + std::string(is_k ? "k" : "v") + "had off when the default " + name + " type is " +
           std::string(KvFormatName(fl.base));
  }
  if (IkBlock(v.head_dim) != want) {
    return "the spec rotates " + name + " in " + std::to_string(want) + "-element blocks, ik_llama.cpp in " +
           std::to_string(IkBlock(v.head_dim));
  }
  return "";
}

std::vector<std::string> IkAnalyze(const TargetView& v, const ModelConfig&) {
  std::vector<std::string> why;
  if (std::string p = ProtectionReason(v); !p.empty()) why.push_back(p);
  if (v.heads_differ) why.push_back("ik_llama.cpp has one K type and one V type for all KV heads of a layer");
  for (const HeadConfig& p : v.heads) {
    if (p.rot != v.heads.front().rot) {
      why.push_back("rotation is one setting for all layers in ik_llama.cpp (-khad, -vhad)");
      break;
    }
  }
  for (bool is_k : {true, false}) {
    const std::vector<KvFormat> types = IkTypes(is_k);
    for (KvFormat f : Column(v, is_k)) {
      if (std::find(types.begin(), types.end(), f) != types.end()) continue;
      why.push_back(f == KvFormat::kQ8Kv ? std::string("ik_llama.cpp's q8_KV V cache is one row per token across the "
                                                       "KV heads, which its flash attention does not read per head")
                                         : std::string(KvFormatName(f)) + " is not a " + (is_k ? "K" : "V") +
                                               " cache type of ik_llama.cpp (" + FormatList(types) + ")");
      return why;
    }
    const auto fl = FitFirstLast(Column(v, is_k));
    if (!fl) {
      why.push_back(std::string("ik_llama.cpp sets other ") + (is_k ? "K" : "V") +
                    " types only for the first N and the last M layers (-ct" + (is_k ? "k" : "v") + "-first/-last)");
    } else if (std::string r = RotationMismatch(v, is_k, *fl); !r.empty()) {
      why.push_back(r);
    }
  }
  return why;
}

std::vector<CacheConfig> IkCandidates(const TargetView& v, const ModelConfig&) {
  const RotationMode rot = v.heads.front().rot;
  CandidateKeys extra;  // the rotation as the spec measured it, under its attention mode
  if (v.attention == AttentionMode::kLlamaCpp) {
    extra.attention = AttentionMode::kLlamaCpp;
    if (rot == RotationMode::kOff) extra.mods.rot = RotationMode::kOff;
  } else if (rot == RotationMode::kOn) {
    extra.mods.rot = RotationMode::kOn;
  }
  return StandInSpecs(v, LlamaCppCacheTypes(), /*same_kv=*/false, /*per_layer=*/true, extra);
}

void AddTypeFlags(const FirstLast& fl, const std::string& kv, std::vector<std::string>& flags) {
  flags.push_back("-ct" + kv + " " + std::string(KvFormatName(fl.base)));
  if (fl.n_first)
    flags.push_back("-ct" + kv + "-first " + std::string(KvFormatName(fl.first)) + "," + std::to_string(fl.n_first));
  if (fl.n_last)
    flags.push_back("-ct" + kv + "-last " + std::string(KvFormatName(fl.last)) + "," + std::to_string(fl.n_last));
}

void IkRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  const FirstLast k = *FitFirstLast(Column(v, true)), vv = *FitFirstLast(Column(v, false));
  AddTypeFlags(k, "k", out.flags);
  AddTypeFlags(vv, "v", out.flags);
  out.flags.push_back("-fa on");
  const bool khad = SpecBlock(v, true) && AnyQuantized(Column(v, true));
  const bool vhad = SpecBlock(v, false) && AnyQuantized(Column(v, false));
  if (khad) out.flags.push_back("-khad");
  if (vhad) out.flags.push_back("-vhad");
  out.command_example = "llama-server -m model.gguf -c " + std::to_string(ctx);
  for (const std::string& f : out.flags) out.command_example += " " + f;
  if (khad || vhad) {
    out.notes.push_back(
        "-khad/-vhad: an orthonormal Walsh-Hadamard transform of each " + std::to_string(IkBlock(v.head_dim)) +
        "-element head, Q with K, the output back with V; it also rotates layers kept at full precision "
        "(the same values up to their rounding)");
  } else if (v.AnyQuantized()) {
    out.notes.push_back(
        "no rotation: ik_llama.cpp has no automatic rotation (mainline's PR #21038); -khad/-vhad are opt-in");
  }
  if ((c.arch == Arch::kLlama || c.arch == Arch::kMistral || c.arch == Arch::kMixtral) && AnyQuantized(Column(v, true)))
    out.notes.push_back(PermutedKNote());
  const std::vector<KvFormat> kcol = Column(v, true);
  if (std::find(kcol.begin(), kcol.end(), KvFormat::kQ8Kv) != kcol.end()) {
    out.notes.push_back(
        "with a q8_KV K cache ik_llama.cpp's CPU flash attention quantizes Q to q8_KV too and takes integer dot "
        "products; kvaudit measures the cache with f32 queries; q8_KV has no CUDA kernels");
  }
  out.notes.push_back("kvaudit's engine=llama.cpp emulates mainline llama.cpp's CPU kernels, not ik_llama.cpp's");
  out.notes.push_back("flash attention is on by default in ik_llama.cpp; -fa on is given for clarity");
  out.applies_to = "ik_llama.cpp @8337e4cd (2026-08-15); per-layer types since PR #1599";
  out.memory = GgmlCacheMemory(v.layers, c, ctx, IkLlamaCppCells());
}

}  // namespace

const TargetRules& IkLlamaCppEngine() {
  static const TargetRules impl{DeployTarget::kIkLlamaCpp, IkAnalyze, IkCandidates, IkRender};
  return impl;
}

}  // namespace kvaudit
