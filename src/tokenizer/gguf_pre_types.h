// tokenizer.ggml.pre values -> pre-tokenizer regexes and flags, following the table in
// llama.cpp's src/llama-vocab.cpp (llama_vocab::impl::load and llm_tokenizer_bpe). The patterns
// are the originals from each model's tokenizer.json, which PCRE2 runs directly (llama.cpp
// rewrites (?i:...) because std::regex lacks it).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

struct GgufPreType {
  std::vector<std::string> regexes;  // applied in order
  bool ignore_merges = false;        // a whole pre-token found in the vocab is used as is
  bool add_bos = false;              // default when tokenizer.ggml.add_bos_token is absent
};

// Error (exit 2) naming an unknown pre type.
Expected<GgufPreType> LookupGgufPreType(const std::string& pre);

}  // namespace kvaudit
