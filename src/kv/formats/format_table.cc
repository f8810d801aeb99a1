#include "kv/formats/format_table.h"

#include <array>

#include "base/status.h"
#include "kv/formats/bf16.h"
#include "kv/formats/f16.h"
#include "kv/formats/f32.h"
#include "kv/formats/fp8.h"
#include "kv/formats/int_group.h"
#include "kv/formats/iq4_nl.h"
#include "kv/formats/q4_0.h"
#include "kv/formats/q4_1.h"
#include "kv/formats/q5_0.h"
#include "kv/formats/q5_1.h"
#include "kv/formats/q8_0.h"

namespace kvaudit {
namespace {

constexpr std::array<FormatRow, 15> kTable = {{
    {KvFormat::kF32, "f32 values", "reference (no quantization)"},
    {KvFormat::kF16, "IEEE f16 values", "llama.cpp -ctk/-ctv f16 (default), vLLM/TRT-LLM auto"},
    {KvFormat::kBF16, "bfloat16 values", "llama.cpp bf16, vLLM with bf16 models"},
    {KvFormat::kFp8E4M3, "OCP e4m3fn codes of x/scale (scale per layer or head; dynamic: f32 per 32)",
     "vLLM/TRT-LLM --kv-cache-dtype fp8(_e4m3)"},
    {KvFormat::kFp8E5M2, "OCP e5m2 codes of x/scale (scale per layer or head; dynamic: f32 per 32)",
     "vLLM --kv-cache-dtype fp8_e5m2"},
    {KvFormat::kQ8_0, "32-elem blocks: f16 d + 32 int8", "llama.cpp/ollama -ctk q8_0 (OLLAMA_KV_CACHE_TYPE=q8_0)"},
    {KvFormat::kQ4_0, "32-elem blocks: f16 d + 32 x 4-bit", "llama.cpp/ollama -ctk q4_0"},
    {KvFormat::kQ4_1, "32-elem blocks: f16 d, f16 m + 32 x 4-bit", "llama.cpp -ctk q4_1"},
    {KvFormat::kQ5_0, "32-elem blocks: f16 d + 32-bit high bits + 32 x 4-bit", "llama.cpp -ctk q5_0"},
    {KvFormat::kQ5_1, "32-elem blocks: f16 d, f16 m + 32-bit high bits + 32 x 4-bit", "llama.cpp -ctk q5_1"},
    {KvFormat::kIq4Nl, "32-elem blocks: f16 d + 32 x 4-bit non-linear codebook", "llama.cpp -ctk iq4_nl"},
    {KvFormat::kKivi2, "K per channel over G tokens, V per token over G channels: 2-bit + f16 scale/min",
     "KIVI (arXiv 2402.02750), HF QuantizedCache-like"},
    {KvFormat::kKivi4, "as kivi2 with 4-bit codes", "KIVI 4-bit"},
    {KvFormat::kInt8, "per token, groups of G: f16 scale + f16 min + 8-bit", "HF QuantizedCache nbits=8"},
    {KvFormat::kInt4, "per token, groups of G: f16 scale + f16 min + 4-bit", "HF QuantizedCache nbits=4 (quanto)"},
}};

}  // namespace

std::span<const FormatRow> FormatTable() { return kTable; }

const FormatRow& FormatInfo(KvFormat f) {
  for (const FormatRow& r : kTable) {
    if (r.id == f) return r;
  }
  KV_CHECK_MSG(false, "format missing from the table");
  return kTable[0];
}

const RowCodec* CodecFor(KvFormat f, const HeadPolicy& p) {
  const bool dynamic = p.scale == Fp8ScaleMode::kDynamic;
  switch (f) {
    case KvFormat::kF32: return &F32Codec();
    case KvFormat::kF16: return &F16Codec();
    case KvFormat::kBF16: return &BF16Codec();
    case KvFormat::kFp8E4M3: return dynamic ? &Fp8E4M3DynamicCodec() : &Fp8E4M3Codec();
    case KvFormat::kFp8E5M2: return dynamic ? &Fp8E5M2DynamicCodec() : &Fp8E5M2Codec();
    case KvFormat::kQ8_0: return &Q8_0Codec();
    case KvFormat::kQ4_0: return &Q4_0Codec();
    case KvFormat::kQ4_1: return &Q4_1Codec();
    case KvFormat::kQ5_0: return &Q5_0Codec();
    case KvFormat::kQ5_1: return &Q5_1Codec();
    case KvFormat::kIq4Nl: return &Iq4NlCodec();
    case KvFormat::kInt8: return &Int8Codec();
    case KvFormat::kInt4: return &Int4Codec();
    case KvFormat::kKivi2:
    case KvFormat::kKivi4: return nullptr;
  }
  return nullptr;
}

double BitsPerElement(KvFormat f, const HeadPolicy& p, int head_dim) {
  if (IsKivi(f)) {
    // Every group of G elements carries an f16 scale and an f16 min (32 bits) besides its codes.
    const int bits = f == KvFormat::kKivi2 ? 2 : 4;
    return bits + 32.0 / p.KiviGroup();
  }
  CodecParams params;
  params.group = p.IntGroup();
  return CodecFor(f, p)->bits_per_element(head_dim, params);
}

}  // namespace kvaudit
