// openai/gpt-oss-20b's config.json (transformers' keys) at the sizes of the tiny gpt-oss goldens
// (../shared/golden/llamacpp/gpt-oss*/meta.json): shared by the config tests and the golden test
// that writes those goldens as Hugging Face checkpoints.
#pragma once

#include <nlohmann/json.hpp>

namespace kvaudit::testing {

// truncate: YaRN's rope_scaling.truncate (true: rounded correction dims, what llama.cpp computes for
// the GGUF; false: what the published config.json says).
inline nlohmann::json TinyGptOssHfConfig(bool truncate) {
  return {{"model_type", "gpt_oss"},
          {"architectures", {"GptOssForCausalLM"}},
          {"hidden_size", 64},
          {"num_hidden_layers", 3},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 16},
          {"intermediate_size", 64},
          {"num_local_experts", 4},
          {"num_experts_per_tok", 2},
          {"experts_per_token", 2},
          {"vocab_size", 256},
          {"max_position_embeddings", 131072},
          {"rms_norm_eps", 1e-05},
          {"rope_theta", 150000.0},
          {"rope_scaling",
           {{"rope_type", "yarn"},
            {"factor", 32.0},
            {"beta_fast", 32.0},
            {"beta_slow", 1.0},
            {"original_max_position_embeddings", 4096},
            {"truncate", truncate}}},
          {"sliding_window", 8},
          {"swiglu_limit", 7.0},
          {"attention_bias", true},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false}};
}

}  // namespace kvaudit::testing
