// Tokenizers taken from the model files:
//  - byte-level BPE (GPT-2 style) from tokenizer.json or from GGUF with tokenizer.ggml.model = "gpt2",
//    pre-tokenized by the model's split regex (gpt2, llama-bpe/llama3, qwen2 ...; PCRE2 with UTF/UCP);
//  - SentencePiece-style BPE from GGUF with tokenizer.ggml.model = "llama" (merge by score, "▁" for
//    spaces, <0xNN> byte fallback).
// Special tokens in the text are matched as whole tokens when parse_special is true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvaudit {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // dir holds tokenizer.json (and optionally tokenizer_config.json for add_bos/bos/eos).
  static Expected<std::unique_ptr<Tokenizer>> FromHfDir(const std::string& dir);
  static Expected<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& gguf);
  // FromHfDir over file contents already in memory (fuzz target, tests). config_json is the
  // tokenizer_config.json text, empty when there is none; label names the source in errors.
  static Expected<std::unique_ptr<Tokenizer>> FromHfJsonText(std::string_view tokenizer_json,
                                                             std::string_view config_json, const std::string& label);

  // Text -> ids. add_bos: prepend BOS (callers pass add_bos_default() for the model's convention).
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special = true) const = 0;
  // Ids -> text (byte-level tokens decoded to bytes, ▁ to space, <0xNN> to the byte). Special tokens
  // are rendered as their text when render_special is true, else skipped.
  virtual std::string Decode(std::span<const int32_t> ids, bool render_special = false) const = 0;
  // The raw vocabulary string of one id (as stored in the file).
  virtual const std::string& TokenString(int32_t id) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 if none
  virtual int32_t eos_id() const = 0;  // -1 if none
  virtual bool add_bos_default() const = 0;

  // Feeds `add` everything Encode's ids depend on, as loaded, in a fixed order: the vocabulary
  // (strings, attributes, BOS/EOS/UNK, add_bos), the merges by rank or the scores, the
  // pre-tokenizer's patterns and flags. The model's identity when its weights are not loaded
  // (run/fingerprint.h HashModelConfigTokenizer): a changed merge or pattern changes the hash.
  using DigestSink = std::function<void(const void* data, size_t bytes)>;
  virtual void Digest(const DigestSink& add) const = 0;
};

}  // namespace kvaudit
