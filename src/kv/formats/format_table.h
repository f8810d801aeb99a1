// The table of KV formats (ggml's type-traits idea): one row per format with its name, family,
// codec, llama.cpp type traits, layout and who deploys it. Everything that depends on the format
// reads its row: stores take the codec from it, the llama.cpp emulation its ggml traits, configuration
// validation its block size, `kvaudit formats` prints it.
//
// Adding a format: its own .h/.cc under kv/formats/ (codec, and ggml traits if llama.cpp has it),
// its enum value and row here and in format_table.cc, one test (docs/formats.md "Adding a format").
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

enum class KvFormat {
  kF32,
  kF16,
  kBF16,
  kFp8E4M3,
  kFp8E5M2,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kIq4Nl,
  kKivi2,
  kKivi4,
  kInt8,
  kInt4,
  kNvfp4,
  kNvfp4FourOverSix,
  kFp4MxBlock16,
  kInt8PerTokenHead,
  kFp8PerTokenHead,
  kQ8Kv,
  kTurboQuantMse4,
  kTurboQuantMse3,
  kTurboQuantUniform4,
  kTurboQuantUniform3,
};

enum class FormatFamily {
  kFloat,       // f32, f16, bf16: full precision, modifiers (rotation, sinks, ...) do not apply
  kFp8,         // OCP fp8 with a per-tensor/head scale or a dynamic per-32 scale
  kGgmlBlock,   // llama.cpp's 32-element block formats
  kIntGroup,    // per-token asymmetric groups (HF QuantizedCache)
  kKivi,        // keys per channel over token groups, values per token (not a per-row format)
  kScaledRow,   // the GPU engines' and ik_llama.cpp's rows: codes with their scales inside the row
                // (per 16-element block or per row), nvfp4 also with a per-tensor scale
  kTurboQuant,  // vLLM's TurboQuant rows: Hadamard + Lloyd-Max keys, min/max values (one per row)
};

struct FormatRow {
  KvFormat id;
  std::string_view name;  // the --kv spelling
  FormatFamily family;
  int code_bits;                       // bits of one element's code (scales and metadata excluded)
  const RowCodec& (*codec)();          // nullptr for KIVI
  const RowCodec& (*codec_ref)();      // the same bytes with the scalar twins (tests compare them)
  const RowCodec& (*dynamic_codec)();  // fp8 `scale=dynamic` (per-32 f32 scales); else nullptr
  // The per-tensor (or per-head) scale `scale=calib` derives from a calibrated amax (CodecParams::
  // scale); nullptr where the format has no such scale (`scale=` does not apply to it).
  float (*calib_scale)(float amax);
  const ggml::GgmlType& (*ggml)();  // llama.cpp's type traits; nullptr where llama.cpp has no such cache type
  std::string_view layout;          // what the bytes are
  std::string_view deployed_by;     // the engines/flags where users meet it
  // The codec rotates each row into the H/√n basis itself and dequantizes in that basis (TurboQuant
  // keys): the cache rotates the queries for such keys, and the attention output back for such
  // values, and never rotates the rows before storing them (rot= does not apply).
  bool rotates_rows = false;
};

std::span<const FormatRow> FormatTable();
const FormatRow& Format(KvFormat f);
std::optional<KvFormat> KvFormatFromName(std::string_view name);

inline std::string_view KvFormatName(KvFormat f) { return Format(f).name; }
inline bool IsFullPrecision(KvFormat f) { return Format(f).family == FormatFamily::kFloat; }
inline bool IsFp8(KvFormat f) { return Format(f).family == FormatFamily::kFp8; }
inline bool IsKivi(KvFormat f) { return Format(f).family == FormatFamily::kKivi; }
inline bool IsIntGroup(KvFormat f) { return Format(f).family == FormatFamily::kIntGroup; }
// The format stores x under a per-tensor (or per-head) scale, 1.0 (`scale=unit`) or calibrated.
inline bool HasTensorScale(KvFormat f) { return Format(f).calib_scale != nullptr; }
inline bool RowRotatesItself(KvFormat f) { return Format(f).rotates_rows; }
inline bool IsLlamaCppBlockFormat(KvFormat f) { return Format(f).family == FormatFamily::kGgmlBlock; }
// llama.cpp has it as a cache type (full precision or block format): engine=llama.cpp can run it.
inline bool HasLlamaCppType(KvFormat f) { return Format(f).ggml != nullptr; }
// Elements per block along head_dim that the format needs head_dim to be a multiple of (llama.cpp's
// blocks: 32; nvfp4: 16; q8_KV: 32), else 0.
int FormatBlockElems(KvFormat f);

// vLLM's TurboQuant presets (`--kv-cache-dtype NAME`, vllm-project/vllm:vllm/model_executor/layers/
// quantization/turboquant/config.py TQ_PRESETS @1471680b): the K and V formats of each. vLLM keeps
// the first and last two layers of a non-hybrid model unquantized under every preset (the
// layers=ends selector of kv/config/cache_config.h).
struct TurboQuantPreset {
  std::string_view name;  // vLLM's dtype name, also a kvaudit `kv=` value
  KvFormat k, v;
};
std::span<const TurboQuantPreset> TurboQuantPresets();
const TurboQuantPreset* TurboQuantPresetNamed(std::string_view name);
const TurboQuantPreset* TurboQuantPresetFor(KvFormat k, KvFormat v);  // nullptr: no preset stores these

// The row codec a format stores with (fp8_dynamic: fp8's dynamic-scale codec); nullptr for KIVI.
const RowCodec* CodecFor(KvFormat f, bool fp8_dynamic);

// Storage bits per element including scales and metadata, for rows of head_dim elements. group:
// the int8/int4 or KIVI group size in use; full-precision protections excluded (KIVI: packed
// groups only, residual excluded).
double BitsPerElement(KvFormat f, int group, bool fp8_dynamic, int head_dim);

}  // namespace kvaudit
