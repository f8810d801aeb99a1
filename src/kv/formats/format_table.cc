#include "kv/formats/format_table.h"

#include <array>

#include "base/status.h"
#include "kv/formats/float_codecs.h"
#include "kv/formats/fp8.h"
#include "kv/formats/int_group.h"
#include "kv/formats/ggml_block_codecs.h"
#include "kv/formats/fp4_mx_block16.h"
#include "kv/formats/nvfp4.h"
#include "kv/formats/per_token_head.h"
#include "kv/formats/q8_kv.h"
#include "kv/formats/turboquant.h"

namespace kvaudit {
namespace {

using F = FormatFamily;

float Fp8E4M3CalibScale(float amax) { return Fp8CalibScale(amax, Fp8Kind::kE4M3); }
float Fp8E5M2CalibScale(float amax) { return Fp8CalibScale(amax, Fp8Kind::kE5M2); }

// In KvFormat order (checked below), so a row is found by its id.
constexpr std::array<FormatRow, 25> kTable = {{
    {KvFormat::kF32, "f32", F::kFloat, 32, F32Codec, F32CodecRef, nullptr, nullptr, F32Ggml, "f32 values",
     "reference (no quantization)"},
    {KvFormat::kF16, "f16", F::kFloat, 16, F16Codec, F16CodecRef, nullptr, nullptr, F16Ggml, "IEEE f16 values",
     "llama.cpp -ctk/-ctv f16 (default), vLLM/SGLang --kv-cache-dtype auto, TRT-LLM KvCacheConfig dtype auto"},
    {KvFormat::kBF16, "bf16", F::kFloat, 16, BF16Codec, BF16CodecRef, nullptr, nullptr, BF16Ggml, "bfloat16 values",
     "llama.cpp bf16, vLLM with bf16 models"},
    {KvFormat::kFp8E4M3, "fp8_e4m3", F::kFp8, 8, Fp8E4M3Codec, Fp8E4M3CodecRef, Fp8E4M3DynamicCodec, Fp8E4M3CalibScale,
     nullptr, "OCP e4m3fn codes of x/scale (scale per layer or head; dynamic: f32 per 32)",
     "vLLM/SGLang --kv-cache-dtype fp8(_e4m3)"},
    {KvFormat::kFp8E5M2, "fp8_e5m2", F::kFp8, 8, Fp8E5M2Codec, Fp8E5M2CodecRef, Fp8E5M2DynamicCodec, Fp8E5M2CalibScale,
     nullptr, "OCP e5m2 codes of x/scale (scale per layer or head; dynamic: f32 per 32)",
     "vLLM --kv-cache-dtype fp8_e5m2"},
    {KvFormat::kQ8_0, "q8_0", F::kGgmlBlock, 8, Q8_0Codec, Q8_0CodecRef, nullptr, nullptr, Q8_0Ggml,
     "32-elem blocks: f16 d + 32 int8", "llama.cpp/ollama -ctk q8_0 (OLLAMA_KV_CACHE_TYPE=q8_0)"},
    {KvFormat::kQ4_0, "q4_0", F::kGgmlBlock, 4, Q4_0Codec, Q4_0CodecRef, nullptr, nullptr, Q4_0Ggml,
     "32-elem blocks: f16 d + 32 x 4-bit", "llama.cpp/ollama -ctk q4_0"},
    {KvFormat::kQ4_1, "q4_1", F::kGgmlBlock, 4, Q4_1Codec, Q4_1CodecRef, nullptr, nullptr, Q4_1Ggml,
     "32-elem blocks: f16 d, f16 m + 32 x 4-bit", "llama.cpp -ctk q4_1"},
    {KvFormat::kQ5_0, "q5_0", F::kGgmlBlock, 5, Q5_0Codec, Q5_0CodecRef, nullptr, nullptr, Q5_0Ggml,
     "32-elem blocks: f16 d + 32-bit high bits + 32 x 4-bit", "llama.cpp -ctk q5_0"},
    {KvFormat::kQ5_1, "q5_1", F::kGgmlBlock, 5, Q5_1Codec, Q5_1CodecRef, nullptr, nullptr, Q5_1Ggml,
     "32-elem blocks: f16 d, f16 m + 32-bit high bits + 32 x 4-bit", "llama.cpp -ctk q5_1"},
    {KvFormat::kIq4Nl, "iq4_nl", F::kGgmlBlock, 4, Iq4NlCodec, Iq4NlCodecRef, nullptr, nullptr, Iq4NlGgml,
     "32-elem blocks: f16 d + 32 x 4-bit non-linear codebook", "llama.cpp -ctk iq4_nl"},
    {KvFormat::kKivi2, "kivi2", F::kKivi, 2, nullptr, nullptr, nullptr, nullptr, nullptr,
     "K per channel over G tokens, V per token over G channels: 2-bit + f16 scale/min",
     "KIVI (arXiv 2402.02750), HF QuantizedCache-like"},
    {KvFormat::kKivi4, "kivi4", F::kKivi, 4, nullptr, nullptr, nullptr, nullptr, nullptr, "as kivi2 with 4-bit codes",
     "KIVI 4-bit"},
    {KvFormat::kInt8, "int8", F::kIntGroup, 8, Int8Codec, Int8CodecRef, nullptr, nullptr, nullptr,
     "per token, groups of G: f16 scale + f16 min + 8-bit", "kvaudit grid (HF 8-bit exists only via HQQ, another fit)"},
    {KvFormat::kInt4, "int4", F::kIntGroup, 4, Int4Codec, Int4CodecRef, nullptr, nullptr, nullptr,
     "per token, groups of G: f16 scale + f16 min + 4-bit", "HF QuantizedCache nbits=4 (quanto)"},
    {KvFormat::kNvfp4, "nvfp4", F::kScaledRow, 4, Nvfp4Codec, Nvfp4CodecRef, nullptr, Nvfp4CalibScale, nullptr,
     "16-elem blocks: e4m3 scale + 16 x e2m1; one f32 k_scale/v_scale per layer",
     "vLLM --kv-cache-dtype nvfp4 (SM100 FlashInfer), SGLang --kv-cache-dtype nvfp4, TensorRT-LLM "
     "KvCacheConfig(dtype=\"nvfp4\")"},
    {KvFormat::kNvfp4FourOverSix, "nvfp4_4over6", F::kScaledRow, 4, Nvfp4FourOverSixCodec, Nvfp4FourOverSixCodecRef,
     nullptr, Nvfp4CalibScale, nullptr, "as nvfp4; each block's scale max/6 or max/4, the smaller squared error",
     "vLLM --kv-cache-dtype nvfp4_4over6"},
    {KvFormat::kFp4MxBlock16, "fp4_mx_block16", F::kScaledRow, 4, Fp4MxBlock16Codec, Fp4MxBlock16CodecRef, nullptr,
     nullptr, nullptr, "16-elem blocks: power-of-two scale byte + 16 x e2m1 (exponent ceil(log2(amax/6)), ties up)",
     "SGLang --kv-cache-dtype fp4_mx_block16 (formerly fp4_e2m1)"},
    {KvFormat::kInt8PerTokenHead, "int8_per_token_head", F::kScaledRow, 8, Int8PerTokenHeadCodec,
     Int8PerTokenHeadCodecRef, nullptr, nullptr, nullptr,
     "per token and head: f32 scale amax/127 + int8 (half away from zero)",
     "vLLM --kv-cache-dtype int8_per_token_head (Triton attention)"},
    {KvFormat::kFp8PerTokenHead, "fp8_per_token_head", F::kScaledRow, 8, Fp8PerTokenHeadCodec, Fp8PerTokenHeadCodecRef,
     nullptr, nullptr, nullptr, "per token and head: f32 scale amax/448 + e4m3",
     "vLLM --kv-cache-dtype fp8_per_token_head (Triton attention)"},
    {KvFormat::kQ8Kv, "q8_KV", F::kScaledRow, 8, Q8KvCodec, Q8KvCodecRef, nullptr, nullptr, nullptr,
     "per token and head: f32 d = amax/127, int32 sum + int8", "ik_llama.cpp -ctk q8_KV (CPU)"},
    {KvFormat::kTurboQuantMse4, "turboquant_mse4", F::kTurboQuant, 4, TurboQuantMse4Codec, TurboQuantMse4CodecRef,
     nullptr, nullptr, nullptr,
     "per token and head: x/|x| rotated by H/sqrt(d), 4-bit Lloyd-Max codes for N(0,1/d) + f16 |x| (norm-corrected "
     "read)",
     "vLLM --kv-cache-dtype turboquant_4bit_nc (keys)", true},
    {KvFormat::kTurboQuantMse3, "turboquant_mse3", F::kTurboQuant, 3, TurboQuantMse3Codec, TurboQuantMse3CodecRef,
     nullptr, nullptr, nullptr, "as turboquant_mse4 with 3-bit codes",
     "vLLM --kv-cache-dtype turboquant_k3v4_nc, turboquant_3bit_nc (keys)", true},
    {KvFormat::kTurboQuantUniform4, "turboquant_uniform4", F::kTurboQuant, 4, TurboQuantUniform4Codec,
     TurboQuantUniform4CodecRef, nullptr, nullptr, nullptr,
     "per token and head: 4-bit codes of (x - min)/scale, half up + f16 scale, f16 min",
     "vLLM --kv-cache-dtype turboquant_k8v4, turboquant_4bit_nc, turboquant_k3v4_nc (values)"},
    {KvFormat::kTurboQuantUniform3, "turboquant_uniform3", F::kTurboQuant, 3, TurboQuantUniform3Codec,
     TurboQuantUniform3CodecRef, nullptr, nullptr, nullptr, "as turboquant_uniform4 with 3-bit codes",
     "vLLM --kv-cache-dtype turboquant_3bit_nc (values)"},
}};

constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].id) != i) return false;
  }
  return true;
}
static_assert(RowsInEnumOrder(), "format table rows must follow the KvFormat enum order");
static_assert(kTable.size() == static_cast<size_t>(KvFormat::kTurboQuantUniform3) + 1, "one row per KvFormat");

}  // namespace

std::span<const FormatRow> FormatTable() { return kTable; }

const FormatRow& Format(KvFormat f) {
  const auto i = static_cast<size_t>(f);
  KV_CHECK_MSG(i < kTable.size(), "KvFormat out of range");
  return kTable[i];
}

std::optional<KvFormat> KvFormatFromName(std::string_view name) {
  for (const FormatRow& r : kTable) {
    if (r.name == name) return r.id;
  }
  return std::nullopt;
}

std::span<const TurboQuantPreset> TurboQuantPresets() {
  // k8v4's keys are a plain e4m3 cast (no rotation, no norm): fp8_e4m3 at scale 1.0.
  static constexpr TurboQuantPreset kPresets[] = {
      {"turboquant_k8v4", KvFormat::kFp8E4M3, KvFormat::kTurboQuantUniform4},
      {"turboquant_4bit_nc", KvFormat::kTurboQuantMse4, KvFormat::kTurboQuantUniform4},
      {"turboquant_k3v4_nc", KvFormat::kTurboQuantMse3, KvFormat::kTurboQuantUniform4},
      {"turboquant_3bit_nc", KvFormat::kTurboQuantMse3, KvFormat::kTurboQuantUniform3},
  };
  return kPresets;
}

const TurboQuantPreset* TurboQuantPresetNamed(std::string_view name) {
  for (const TurboQuantPreset& p : TurboQuantPresets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const TurboQuantPreset* TurboQuantPresetFor(KvFormat k, KvFormat v) {
  for (const TurboQuantPreset& p : TurboQuantPresets()) {
    if (p.k == k && p.v == v) return &p;
  }
  return nullptr;
}

int FormatBlockElems(KvFormat f) {
  const FormatRow& r = Format(f);
  const int block = r.codec != nullptr ? r.codec().block_elems : 0;
  return block > 1 ? block : 0;
}

const RowCodec* CodecFor(KvFormat f, bool fp8_dynamic) {
  const FormatRow& r = Format(f);
  if (fp8_dynamic && r.dynamic_codec != nullptr) return &r.dynamic_codec();
  return r.codec != nullptr ? &r.codec() : nullptr;
}

double BitsPerElement(KvFormat f, int group, bool fp8_dynamic, int head_dim) {
  const FormatRow& r = Format(f);
  // KIVI: every group of G elements carries an f16 scale and an f16 min (32 bits) besides its codes.
  if (r.family == FormatFamily::kKivi) return r.code_bits + 32.0 / group;
  CodecParams params;
  params.group = group;
  return CodecFor(f, fp8_dynamic)->bits_per_element(head_dim, params);
}

}  // namespace kvaudit
