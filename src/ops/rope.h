// Rotary position embedding in Hugging Face's rotate-half layout (modeling_llama.py
// apply_rotary_pos_emb): for i < d/2, with angle a = pos · inv_freq[i],
//   y[i]       = x[i]·cos a − x[i+d/2]·sin a
//   y[i+d/2]   = x[i+d/2]·cos a + x[i]·sin a
// GGUF 'llama' checkpoints store Q/K rows permuted for interleaved pairs; weights.cc undoes that at
// load, so this is the only RoPE layout in the engine.
#pragma once

#include <cstdint>
#include <vector>

namespace kvaudit {

enum class RopeType { kDefault, kLinear, kLlama3, kYarn, kLongRope };

struct RopeParams {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  // The dimensions of each head that rotate, from the first (Phi-4-mini: 96 of 128, transformers'
  // partial_rotary_factor, GGUF rope.dimension_count); the rest pass through. 0 = all of them.
  // Frequencies are over these dims: inv_freq[i] = theta^(−2i/dims), paired i with i + dims/2.
  int dims = 0;
  double factor = 1.0;                          // linear and llama3
  double low_freq_factor = 1.0;                 // llama3
  double high_freq_factor = 4.0;                // llama3
  int original_max_position_embeddings = 8192;  // llama3, yarn
  // YaRN (transformers _compute_yarn_parameters; llama.cpp ggml rope_yarn): each frequency blends
  // its interpolated (÷ factor) and original value by a ramp over the pair index between the
  // correction dims of beta_fast and beta_slow rotations; cos and sin are scaled by attn_factor.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  // llama.cpp always floors/ceils the correction dims (ggml_rope_yarn_corr_dims); transformers only
  // when rope_scaling.truncate is true (its default; gpt-oss's config says false). Either way they
  // are clamped to [0, head_dim − 1].
  bool yarn_round_dims = true;
  double attn_factor = 1.0;  // cos/sin multiplier: YaRN's 0.1·ln(factor) + 1 unless the config sets it
  // GGUF llama3 checkpoints store the llama3 adjustment as per-frequency divisors
  // (rope_freqs.weight, [head_dim/2]): inv_freq[i] = theta^(−2i/d) / divisor[i]. Empty = compute.
  std::vector<float> freq_divisors;
  // LongRoPE (Phi-3 128k, Phi-3.5; transformers _compute_longrope_parameters, llama.cpp
  // rope_factors_long/short): per-frequency divisors, the long set when the context the engine is
  // configured with exceeds original_max_position_embeddings, else the short set, fixed for every
  // position (llama.cpp get_rope_factors by n_ctx_seq; vLLM Phi3LongRoPEScaledRotaryEmbedding by
  // max_model_len). cos/sin are scaled by attn_factor either way. [head_dim/2] each.
  std::vector<float> long_factors, short_factors;

  bool is_longrope() const { return type == RopeType::kLongRope; }
  int RotatedDims(int head_dim) const { return dims > 0 ? dims : head_dim; }
  // LongRoPE: whether a run configured for `context` tokens uses the long factors.
  bool UsesLongFactors(int context) const { return context > original_max_position_embeddings; }
  // These parameters as a run configured for `context` tokens applies them: LongRoPE's chosen set as
  // freq_divisors; every other type unchanged.
  RopeParams ForContext(int context) const;
};

// "default", "linear", "llama3", "yarn", "longrope" (as config.json and `kvaudit info` spell them).
const char* RopeTypeName(RopeType t);

// inv_freq [RotatedDims(head_dim)/2], as transformers' _compute_default_rope_parameters /
// _compute_linear_scaling_rope_parameters / _compute_llama3_parameters / _compute_yarn_parameters
// (modeling_rope_utils.py) in f32. LongRoPE needs ForContext first (its set depends on the run).
std::vector<float> RopeInvFreq(const RopeParams& p, int head_dim);

// Precomputed cos/sin for positions [0, max_pos): cos a and sin a with a = f32(pos · inv_freq[i])
// (f32 product as in LlamaRotaryEmbedding.forward; cos/sin evaluated in double, then rounded).
// Partial rotary (RopeParams::dims): only the first dims of each head rotate (transformers'
// q[..., :rotary_dim] with rotate_half inside it; ggml's NEOX rope with n_dims < ne0).
// Whose arithmetic the table and the rotation follow: transformers' (above), or ggml's CPU RoPE
// (engine=llama.cpp; ggml-org/llama.cpp @de3ff815 ggml/src/ggml-cpu/ops.cpp): per position the
// angles by ggml_rope_cache_init's recurrence θ_0 = p, θ_{i+1} = f32(θ_i · powf(base, −2/dims)),
// angle = freq_scale · θ_i / divisor_i (linear: freq_scale = 1/factor; llama3 and LongRoPE: the
// divisors), cos/sin by libm's cosf/sinf times attn_factor; and rotate_pairs as GCC compiled it
// there (checked on its outputs): y0 = fma(x0, cos, −f32(x1·sin)), y1 = fma(x0, sin, f32(x1·cos)).
// YaRN's ramp (ext_factor ≠ 0) is not emulated: a YaRN model keeps transformers' table.
enum class RopeArithmetic { kTransformers, kGgml };

class RopeTable {
 public:
  RopeTable() = default;
  RopeTable(const RopeParams& p, int head_dim, int max_pos, RopeArithmetic arithmetic = RopeArithmetic::kTransformers);
  int head_dim() const { return head_dim_; }
  int max_pos() const { return max_pos_; }
  // Adds positions [max_pos(), max_pos) (their values do not depend on the table's size).
  void Extend(int max_pos);
  // x [n_tok, n_heads, head_dim] in place; token t is at position pos0 + t.
  void Apply(float* x, int n_tok, int n_heads, int pos0) const;

 private:
  int head_dim_ = 0, rot_ = 0, max_pos_ = 0;   // rot_: the rotated dims (RopeParams::RotatedDims)
  float mscale_ = 1.0f;                        // cos/sin multiplier (YaRN's attn_factor)
  bool ggml_ = false;                          // RopeArithmetic::kGgml (not for YaRN)
  float base_ = 10000.0f, freq_scale_ = 1.0f;  // ggml's freq_base and freq_scale
  std::vector<float> divisors_;                // [rot_/2] ggml's freq_factors, empty = none
  std::vector<float> inv_;                     // [rot_/2] inverse frequencies
  std::vector<float> cos_, sin_;               // [max_pos, rot_/2]
};

}  // namespace kvaudit
