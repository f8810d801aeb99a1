// The KV-cache scales of a quantized safetensors checkpoint (ModelConfig::kv_scales): the tensors
// vLLM loads into each attention layer's k_scale / v_scale, under the names its loader maps
// (vllm-project/vllm:vllm/model_executor/model_loader/weight_utils.py maybe_remap_kv_scale_name
// @0a1ee72e):
//   model.layers.N.self_attn.k_scale, .v_scale          llm-compressor / compressed-tensors
//   model.layers.N.self_attn.k_proj.k_scale, v_proj.v_scale   ModelOpt
//   model.layers.N.self_attn.kv_scale                    the deprecated single scale (k and v alike)
// Each holds one value (shape [] or [1]: per tensor) or one per KV head (llm-compressor's
// attn_head strategy). A checkpoint with such scales for some layers or tensors and not others,
// another shape, or a value that is not a positive finite number is a bad file (exit 2): an engine
// would run those layers at 1.0 without a word, the silent loss kvaudit exists to catch.
#pragma once

#include <string>

#include "base/status.h"
#include "model/config.h"

namespace kvaudit {

class SafetensorsSet;

// The checkpoint's scales (empty when it has none); `path` names the model in errors.
Expected<CheckpointKvScales> ReadCheckpointKvScales(const SafetensorsSet& st, const ModelConfig& c,
                                                    const std::string& path);

}  // namespace kvaudit
