// Tiny random-weight Llama models written by a test (config.json + one f32 model.safetensors, no
// tokenizer: drive them with token ids), in the spirit of llama.cpp's per-architecture test
// models. Weights are Normal(0, std) from the tests' one seeded source (support/random_rows.h),
// norms are 1, so a seed gives the same model with every toolchain; `edit` may change any tensor
// before it is written (e.g. plant outlier channels in one layer's keys).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kvaudit::testing {

struct TinyLlamaShape {
  int layers = 4, hidden = 128, heads = 2, kv_heads = 2, head_dim = 64, ffn = 256, vocab = 256, ctx = 1024;
  float std = 0.1f;         // weight scale (transformers' initializer_range of the golden models)
  float embed_std = 0.1f;   // token embeddings
  float branch_std = 0.1f;  // o_proj and down_proj, the matrices that write into the residual stream
  uint64_t seed = 1;
};

// name -> [rows, cols] row-major f32 values (1-D tensors: one row).
using TinyTensors = std::map<std::string, std::vector<float>>;

// One f32 tensor of a safetensors file; values empty: zeros of the shape.
struct F32Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};
// A safetensors file of f32 tensors in the given order (header padded to 8 bytes, as the writers do).
void WriteF32Safetensors(const std::filesystem::path& file, const std::vector<F32Tensor>& tensors);

// One tensor given as its stored bytes and safetensors dtype name (e.g. "U8": gpt-oss's MXFP4
// blocks and scales).
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
// The f32 tensors, then the raw ones, in one safetensors file (as WriteF32Safetensors).
void WriteSafetensors(const std::filesystem::path& file, const std::vector<F32Tensor>& tensors,
                      const std::vector<RawTensor>& raw);

// Writes the model into `dir` (created) and returns it. `edit` sees every tensor by its Hugging
// Face name (model.layers.N.self_attn.k_proj.weight: [kv_heads * head_dim, hidden]); `extra`
// tensors are written after the model's (e.g. a quantized checkpoint's k_scale/v_scale).
std::filesystem::path WriteTinyLlama(const std::filesystem::path& dir, const TinyLlamaShape& shape,
                                     const std::function<void(TinyTensors&)>& edit = {},
                                     const std::vector<F32Tensor>& extra = {});

// Multiplies the rows of layer `layer`'s k_proj that produce `channels` of every KV head (their
// RoPE partners must be listed too) by `scale`: keys with a few outlier channels.
void ScaleKeyChannels(TinyTensors& t, const TinyLlamaShape& shape, int layer, const std::vector<int>& channels,
                      float scale);

// n windows of len token ids uniform in [0, vocab) from Rng(seed): text for a model without a
// tokenizer (a random model has no preferred text).
std::vector<std::vector<int32_t>> RandomWindows(int n, int len, int vocab, uint64_t seed);

}  // namespace kvaudit::testing
