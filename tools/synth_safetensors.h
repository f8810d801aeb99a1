// The Hugging Face directory of a plan: config.json (LlamaForCausalLM, llama3 rope_scaling),
// model.safetensors or shards of at most 5 GB with model.safetensors.index.json (transformers'
// save_pretrained default max_shard_size), and tokenizer.json + tokenizer_config.json built from a
// vocabulary GGUF's tokens and merges (byte-level BPE with the vocabulary's pre-tokenizer regexes).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf.h"
#include "synth_plan.h"

namespace kvaudit::synth {

struct SafetensorsShard {
  std::string file;             // model.safetensors or model-0000i-of-0000n.safetensors
  std::vector<size_t> tensors;  // indices into the plan, in file order
  std::string head;             // u64 header length + JSON header (space-padded to 8 bytes)
  uint64_t file_bytes = 0;
};

// transformers PreTrainedModel.save_pretrained: max_shard_size="5GB".
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;

// One file when everything fits in max_shard_bytes, else shards named as transformers names them.
std::vector<SafetensorsShard> LayOutSafetensors(const std::vector<TensorPlan>& plan, uint64_t max_shard_bytes);

// Writes every file into dir (created if missing). The vocabulary must be byte-level BPE
// (tokenizer.ggml.model "gpt2"); checked before any weight is written.
Status WriteSafetensorsDir(const std::string& dir, const Shape& s, FileType t, const std::vector<TensorPlan>& plan,
                           const std::vector<SafetensorsShard>& shards, const GgufFile& vocab, uint64_t seed);

}  // namespace kvaudit::synth
