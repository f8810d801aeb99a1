// The llama.cpp goldens' GGUF weights written as Hugging Face checkpoints (safetensors under
// transformers' names + config.json), so a test can check that both loaders give the same bits.
#pragma once

#include <filesystem>
#include <string>

#include "io/gguf.h"
#include "support/tiny_llama.h"

namespace kvaudit::testing {

// GGUF tensor `gguf_name` as f32 under `hf_name`, in its stored shape; minus_one: stored − 1 (a
// Gemma norm: the GGUF holds 1 + w, transformers w).
F32Tensor GgufAsHf(const GgufFile& gguf, const std::string& gguf_name, const std::string& hf_name,
                   bool minus_one = false);

// Phi-3's GGUF tensors (the tiny golden's shape: 3 layers, hidden 64, 4/2 heads, FFN 128, vocab 256)
// under transformers' names (convert_hf_to_gguf.py Phi3MiniModel maps them one to one: qkv_proj ->
// attn_qkv, gate_up_proj -> ffn_up), with its config.json; `rope` is that file's RoPE keys (JSON
// members, e.g. "rope_scaling": null, or a partial_rotary_factor).
std::filesystem::path WritePhi3AsHf(const std::filesystem::path& gguf_path, const std::filesystem::path& dir,
                                    const std::string& rope = R"("rope_theta": 10000.0, "rope_scaling": null)");

}  // namespace kvaudit::testing
