// The per-layer attention and the Gemma / gpt-oss blocks of ModelConfig, read from GGUF metadata
// (llama.cpp's keys and defaults, src/models/{gemma2,gemma3,openai-moe}.cpp @de3ff815) and from a
// transformers config.json (configuration_gemma2.py, configuration_gemma3.py,
// configuration_gpt_oss.py, modeling_rope_utils.py's YaRN). Internal to model/config.cc.
#pragma once

#include <string>

#include "base/status.h"
#include "model/config.h"
#include "model/config_json_reader.h"

namespace kvaudit {

class GgufFile;

// An optional integer key of the GGUF (def when absent); negative or oversized values are BadInput.
Expected<int> GgufIntOr(const GgufFile& g, const std::string& key, int def);

// Gemma 2/3 and gpt-oss GGUF keys: window and pattern, the local layers' RoPE base, softcaps,
// the attention scale, YaRN, the expert width; the block flags of each architecture.
Status ReadGgufArchBlocks(const GgufFile& g, const std::string& arch, ModelConfig& c);

// {arch}.rope.scaling.type yarn: factor, original context, betas; the keys kvaudit does not
// implement are refused.
Status ReadGgufYarn(const GgufFile& g, const std::string& arch, ModelConfig& c);

// config.json's layer_types (transformers >= 4.53: "sliding_attention" / "full_attention" per
// layer) into c.sliding_layers; without the key, Gemma's pattern (2, or sliding_window_pattern).
Status ReadHfLayerTypes(const JsonReader& r, ModelConfig& c);

// Gemma 2 / Gemma 3 text config.json (configuration_gemma2.py, configuration_gemma3.py Gemma3TextConfig):
// query_pre_attn_scalar, the softcaps (null = none), sliding_window with layer_types or the
// architecture's pattern, Gemma 3's rope_local_base_freq, tie_word_embeddings (default true).
Status ReadHfGemma(const JsonReader& r, ModelConfig& c);

// rope type "yarn" of config.json (rope_scaling / rope_parameters object `p`, named `where`):
// transformers' _compute_yarn_parameters, truncate included (false: unrounded correction dims).
Status ReadHfYarn(const JsonReader& r, const Json& p, const std::string& where, ModelConfig& c);

// LongRoPE (model/config_longrope.cc): a phi3 GGUF's rope_factors_long/short tensors with the
// original context; config.json's rope type "longrope" (or "su") object `p`, named `where`.
Status ReadGgufLongRope(const GgufFile& g, const std::string& arch, ModelConfig& c);
Status ReadHfLongRope(const JsonReader& r, const Json& p, const std::string& where, ModelConfig& c);

// gpt-oss's config.json (configuration_gpt_oss.py): experts, the sliding layers, swiglu_limit
// (only 7 runs), and the blocks' fixed flags (biases, sinks, routing, the clamped SwiGLU).
Status ReadHfGptOss(const JsonReader& r, ModelConfig& c);

}  // namespace kvaudit
