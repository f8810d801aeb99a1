// The GGUF v3 file of a plan (spec: ggml-org/ggml:docs/gguf.md): architecture `llama`, the
// hyperparameter keys convert_hf_to_gguf.py writes (those kvaudit's ConfigFromGguf and llama.cpp
// read), general.file_type, every tokenizer.* key of a vocabulary GGUF, and the tensors' data
// aligned to general.alignment = 32.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf.h"
#include "synth_plan.h"

namespace kvaudit::synth {

inline constexpr uint64_t kGgufAlignment = 32;

// Everything before the tensor data: header, metadata, tensor infos, padding.
struct GgufLayout {
  std::string head;
  std::vector<uint64_t> offsets;  // each tensor's offset in the data section (aligned)
  uint64_t file_bytes = 0;        // what the file will hold
};

Expected<GgufLayout> LayOutGguf(const Shape& s, FileType t, const std::vector<TensorPlan>& plan, const GgufFile& vocab);

// Streams the file to path (through path + ".partial", renamed when complete).
Status WriteGguf(const std::string& path, const GgufLayout& layout, const Shape& s, const std::vector<TensorPlan>& plan,
                 uint64_t seed);

}  // namespace kvaudit::synth
