// llama.cpp (llama-server, llama-cli) and ollama, which runs the upstream llama-server with one
// type for K and V. Sources (docs/deployment.md): llama.cpp common/arg.cpp @145b6280 (-ctk, -ctv,
// the allowed types, -fa), src/llama-kv-cache.cpp (automatic Hadamard rotation, PR #21038, and
// LLAMA_ATTN_ROT_DISABLE), PR #17046 (cache padded to 256 cells); ollama/ollama@fb307609: docs/faq.mdx,
// fs/ggml/ggml.go SupportsKVCacheType, llm/llama_server.go, LLAMA_CPP_VERSION (b10488).
#include <algorithm>
#include <cstdio>

#include "decide/targets/targets.h"

namespace kvaudit {
namespace {

const std::vector<KvFormat>& OllamaTypes() {  // ollama/ollama: fs/ggml/ggml.go SupportsKVCacheType, docs/faq.mdx
  static const std::vector<KvFormat> types = {KvFormat::kF16, KvFormat::kQ8_0, KvFormat::kQ4_0};
  return types;
}

// The Hadamard block llama.cpp applies to a tensor stored as f by default (llama-kv-cache.cpp,
// build_input_k_rot/_v_rot): only quantized tensors and head_dim % 64 == 0; K the largest power of
// two (>= 64) dividing head_dim, V always 64. 0 = not rotated.
int DefaultRotBlock(bool is_k, KvFormat f, int head_dim) {
  if (!IsLlamaCppBlockFormat(f) || head_dim % 64 != 0) return 0;
  if (!is_k) return 64;
  int n = 64;
  while (head_dim % (2 * n) == 0) n *= 2;
  return n;
}

// The block the spec rotates the tensor with: native rot=1 the whole head_dim (quantized tensors
// only, docs/formats.md); engine=llama.cpp rot=auto/1 llama.cpp's own blocks; else 0.
int SpecRotBlock(const TargetView& v, bool is_k, KvFormat f) {
  const RotationMode rot = v.heads.front().rot;
  if (v.attention == AttentionMode::kLlamaCpp)
    return rot == RotationMode::kOff ? 0 : DefaultRotBlock(is_k, f, v.head_dim);
  return rot == RotationMode::kOn && !IsFullPrecision(f) ? v.head_dim : 0;
}

bool DefaultRotates(const LayerKv& l, int hd) {
  return DefaultRotBlock(true, l.k, hd) || DefaultRotBlock(false, l.v, hd);
}

struct RotationFit {
  bool ok = false;
  bool disable = false;  // set LLAMA_ATTN_ROT_DISABLE=1
  std::string why;       // when !ok
};

// Rotation is global in llama.cpp: on by default, off with LLAMA_ATTN_ROT_DISABLE=1.
RotationFit FitRotation(const TargetView& v) {
  const LayerKv l = v.layers.front();
  const int k_spec = SpecRotBlock(v, true, l.k), v_spec = SpecRotBlock(v, false, l.v);
  if (k_spec == 0 && v_spec == 0) return {true, DefaultRotates(l, v.head_dim), ""};
  const int k_def = DefaultRotBlock(true, l.k, v.head_dim), v_def = DefaultRotBlock(false, l.v, v.head_dim);
  if (k_spec == k_def && v_spec == v_def) return {true, false, ""};
  const bool k_off = k_spec != k_def;
  const int spec_block = k_off ? k_spec : v_spec, def_block = k_off ? k_def : v_def;
  std::string why = "rot=1 rotates " + std::string(k_off ? "K" : "V") + " in " + std::to_string(spec_block) +
                    "-element blocks, llama.cpp ";
  why += def_block ? "in " + std::to_string(def_block) + "-element blocks"
                   : "not at all at head_dim " + std::to_string(v.head_dim);
  return {false, false, why + " (its rotation, PR #21038)"};
}

std::vector<std::string> GgmlReasons(const TargetView& v, const std::string& target, const std::vector<KvFormat>& types,
                                     bool same_kv) {
  std::vector<std::string> why;
  if (std::string p = ProtectionReason(v); !p.empty()) why.push_back(p);
  if (v.heads_differ) why.push_back(target + " has one K type and one V type for all KV heads");
  if (!v.FormatsUniform()) why.push_back(target + " has one K type and one V type for all layers");
  bool rot_uniform = true;
  for (const HeadConfig& p : v.heads) rot_uniform = rot_uniform && p.rot == v.heads.front().rot;
  if (!rot_uniform) why.push_back("rotation is one setting for all layers in " + target + " (LLAMA_ATTN_ROT_DISABLE)");
  const LayerKv l = v.layers.front();
  if (same_kv && l.k != l.v) why.push_back(target + " has one type for K and V (OLLAMA_KV_CACHE_TYPE)");
  for (KvFormat f : {l.k, l.v}) {
    if (std::find(types.begin(), types.end(), f) == types.end()) {
      why.push_back(std::string(KvFormatName(f)) + " is not a cache type of " + target + " (" + FormatList(types) +
                    ")");
      break;
    }
  }
  if (why.empty()) {
    if (RotationFit r = FitRotation(v); !r.ok) why.push_back(r.why);
  }
  return why;
}

// Candidates: the stand-ins as the spec rotates them (native: rot=1 or unrotated), then under
// llama.cpp's own default rotation (engine=llama.cpp), the first of each leading; f16 last.
std::vector<CacheConfig> GgmlCandidates(const TargetView& v, const std::vector<KvFormat>& types, bool same_kv) {
  bool rotated = false;
  for (const HeadConfig& p : v.heads) {
    rotated =
        rotated || (v.attention == AttentionMode::kLlamaCpp ? p.rot != RotationMode::kOff : p.rot == RotationMode::kOn);
  }
  if (v.attention == AttentionMode::kLlamaCpp) {
    // Measured with llama.cpp's own arithmetic (--target llama.cpp): its stand-ins are measured the
    // same way, with the rotation as the spec had it, so a verified stand-in is what llama.cpp runs.
    CandidateKeys keys;
    keys.attention = AttentionMode::kLlamaCpp;
    if (!rotated) keys.mods.rot = RotationMode::kOff;
    return StandInSpecs(v, types, same_kv, /*per_layer=*/false, keys);
  }
  CandidateKeys as_measured, llamacpp_default;
  if (rotated) as_measured.mods.rot = RotationMode::kOn;
  llamacpp_default.attention = AttentionMode::kLlamaCpp;
  std::vector<CacheConfig> mine = StandInSpecs(v, types, same_kv, /*per_layer=*/false, as_measured);
  std::vector<CacheConfig> theirs = StandInSpecs(v, types, same_kv, false, llamacpp_default);
  const CacheConfig f16 = mine.back();  // both lists end with k=f16,v=f16
  mine.pop_back(), theirs.pop_back();
  std::vector<CacheConfig> out = {mine.front(), theirs.front()};
  out.insert(out.end(), mine.begin() + 1, mine.end());
  out.insert(out.end(), theirs.begin() + 1, theirs.end());
  out.push_back(f16);
  return out;
}

// The kvaudit spec that measures what llama.cpp runs: its CPU flash attention emulated, rotation
// as set (docs/formats.md "engine=llama.cpp: what is emulated").
std::string MeasureSpec(const LayerKv& l, bool disable) {
  CandidateKeys keys;
  if (disable) keys.mods.rot = RotationMode::kOff;
  keys.attention = AttentionMode::kLlamaCpp;
  return PairSpec(l, keys).spec();
}

void RotationNotes(const TargetView& v, const RotationFit& r, std::vector<std::string>& notes) {
  const LayerKv l = v.layers.front();
  if (!DefaultRotates(l, v.head_dim)) {
    if (v.AnyQuantized())
      notes.push_back("no rotation: llama.cpp rotates quantized tensors only when head_dim is a multiple of 64");
    return;
  }
  if (r.disable) {
    notes.push_back(
        "LLAMA_ATTN_ROT_DISABLE=1 because the spec measured unrotated caches; llama.cpp rotates quantized "
        "caches by default (PR #21038); without it the run is " +
        MeasureSpec(l, false));
    return;
  }
  const int kb = DefaultRotBlock(true, l.k, v.head_dim), vb = DefaultRotBlock(false, l.v, v.head_dim);
  std::string what = kb ? "K in " + std::to_string(kb) + "-element blocks" : "";
  if (vb) what += (what.empty() ? "" : ", ") + std::string("V in 64-element blocks");
  notes.push_back("rotation on (llama.cpp's default for quantized caches, PR #21038): " + what +
                  "; LLAMA_ATTN_ROT_DISABLE=1 switches it off");
}

void CommonNotes(const TargetView& v, const ModelConfig& c, std::vector<std::string>& notes) {
  const LayerKv l = v.layers.front();
  if ((c.arch == Arch::kLlama || c.arch == Arch::kMistral || c.arch == Arch::kMixtral) && IsLlamaCppBlockFormat(l.k)) {
    notes.push_back(PermutedKNote() + "; the measure spec reproduces that");
  }
  const bool fast_pair = l.k == l.v && (l.k == KvFormat::kF16 || l.k == KvFormat::kQ8_0 || l.k == KvFormat::kQ4_0 ||
                                        l.k == KvFormat::kBF16);
  if (!fast_pair) {
    notes.push_back(
        "CUDA builds without -DGGML_CUDA_FA_ALL_QUANTS=ON have flash-attention kernels only for K=V in f16, "
        "bf16, q8_0, q4_0; this pair falls back to the CPU there");
  }
}

// A model with sliding-window layers: the same settings with --swa-full (every layer holds the
// whole context), and what llama-server's default of -np auto (4 slots in one unified cache,
// tools/server/server.cpp @de3ff815) keeps instead of -np 1.
void SlidingWindowVariants(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  out.memory_variants.push_back({"--swa-full", GgmlCacheMemory(v.layers, c, ctx, LlamaCppCells(true))});
  CellRule four_slots = LlamaCppCells(false);
  four_slots.n_seq = 4;
  const KvMemory m = GgmlCacheMemory(v.layers, c, ctx, four_slots);
  char gib[32];
  std::snprintf(gib, sizeof(gib), "%.3f", m.gib_at_target);
  out.notes.push_back(
      "-np 1: llama-server's default -np auto runs 4 slots in one unified cache, whose sliding layers "
      "keep 4 x " +
      std::to_string(c.sliding_window) + " + 512 cells (" + gib + " GiB in all)");
}

// llama.cpp takes K and V types apart from its whole type list; ollama one of three for both.
template <bool kOllama>
std::vector<std::string> GgmlAnalyze(const TargetView& v, const ModelConfig&) {
  return kOllama ? GgmlReasons(v, "ollama", OllamaTypes(), true)
                 : GgmlReasons(v, "llama.cpp", LlamaCppCacheTypes(), false);
}

template <bool kOllama>
std::vector<CacheConfig> GgmlCandidatesOf(const TargetView& v, const ModelConfig&) {
  return kOllama ? GgmlCandidates(v, OllamaTypes(), true) : GgmlCandidates(v, LlamaCppCacheTypes(), false);
}

void LlamaCppRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  const LayerKv l = v.layers.front();
  const RotationFit r = FitRotation(v);
  const std::string k(KvFormatName(l.k)), vv(KvFormatName(l.v));
  out.flags = {"-ctk " + k, "-ctv " + vv};
  // Quantized V needs flash attention (llama-context.cpp refuses it otherwise); kvaudit's
  // llama.cpp emulation is the flash-attention path, so it is set for quantized K too.
  if (v.AnyQuantized()) out.flags.push_back("-fa on");
  std::string env;
  if (r.disable) {
    out.flags.push_back("LLAMA_ATTN_ROT_DISABLE=1");
    env = "LLAMA_ATTN_ROT_DISABLE=1 ";
  }
  const bool sliding = c.n_sliding_layers() > 0;
  if (sliding) out.flags.push_back("-np 1");
  out.command_example = env + "llama-server -m model.gguf -c " + std::to_string(ctx) + " -ctk " + k + " -ctv " + vv +
                        (v.AnyQuantized() ? " -fa on" : "") + (sliding ? " -np 1" : "");
  out.measure_spec = MeasureSpec(l, r.disable);
  RotationNotes(v, r, out.notes);
  CommonNotes(v, c, out.notes);
  out.notes.push_back("memory is for one sequence; -np N slots share the -c cells");
  out.applies_to = "llama.cpp master, common/arg.cpp @145b6280; rotation since PR #21038 (merged 2026-04-01)";
  out.memory = GgmlCacheMemory(v.layers, c, ctx, LlamaCppCells(false));
  if (sliding) SlidingWindowVariants(v, c, ctx, out);
}

void OllamaRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  const LayerKv l = v.layers.front();
  const RotationFit r = FitRotation(v);
  out.flags = {"OLLAMA_KV_CACHE_TYPE=" + std::string(KvFormatName(l.k))};
  if (v.AnyQuantized()) out.flags.push_back("OLLAMA_FLASH_ATTENTION=1");
  out.flags.push_back("OLLAMA_CONTEXT_LENGTH=" + std::to_string(ctx));
  if (r.disable) out.flags.push_back("LLAMA_ATTN_ROT_DISABLE=1");
  std::string cmd;
  for (const std::string& f : out.flags) cmd += f + " ";
  out.command_example = cmd + "ollama serve";
  out.measure_spec = MeasureSpec(l, r.disable);
  RotationNotes(v, r, out.notes);
  CommonNotes(v, c, out.notes);
  out.notes.push_back("OLLAMA_KV_CACHE_TYPE is global: every model this server loads uses it");
  out.notes.push_back("ollama runs llama-server with -c num_ctx x OLLAMA_NUM_PARALLEL; memory is for one slot");
  out.applies_to = "ollama @fb307609 (runs llama.cpp b10488's llama-server)";
  out.memory = GgmlCacheMemory(v.layers, c, ctx, LlamaCppCells(false));
  if (c.n_sliding_layers() > 0) {
    out.notes.push_back(
        "sliding layers sized by llama-server's own rule for one slot; whether ollama passes --swa-full was not read");
  }
}

}  // namespace

std::vector<KvFormat> LlamaCppCacheTypes() {  // common/arg.cpp kv_cache_types
  std::vector<KvFormat> out;
  for (const FormatRow& r : FormatTable()) {
    if (HasLlamaCppType(r.id)) out.push_back(r.id);
  }
  return out;
}

std::string FormatList(const std::vector<KvFormat>& formats) {
  std::string s;
  for (KvFormat f : formats) s += (s.empty() ? "" : ", ") + std::string(KvFormatName(f));
  return s;
}

std::string PermutedKNote() {
  return "llama/mistral GGUFs store Q/K rows permuted (convert_hf_to_gguf.py), so a 32-element K block holds other "
         "channels than in kvaudit's native engine (docs/formats.md)";
}

const TargetRules& LlamaCppEngine() {
  static const TargetRules impl{DeployTarget::kLlamaCpp, GgmlAnalyze<false>, GgmlCandidatesOf<false>, LlamaCppRender};
  return impl;
}

const TargetRules& OllamaEngine() {
  static const TargetRules impl{DeployTarget::kOllama, GgmlAnalyze<true>, GgmlCandidatesOf<true>, OllamaRender};
  return impl;
}

}  // namespace kvaudit
