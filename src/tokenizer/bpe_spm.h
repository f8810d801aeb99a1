// SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm_session runs it for GGUF
// tokenizer.ggml.model = "llama" (Llama-2, Phi-3): spaces become "▁" (U+2581), a "▁" is prefixed
// to text at the start and after each special token (add_space_prefix), the text starts as single
// UTF-8 characters, and the adjacent pair whose concatenation is a vocabulary token with the
// highest score is merged (leftmost on ties) until no pair is a token. A character that is not a
// token falls back to its <0xNN> byte tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace kvaudit {

class SpmTokenizer final : public Tokenizer {
 public:
  SpmTokenizer(Vocab vocab, std::vector<float> scores, bool add_space_prefix);

  std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special = true) const override;
  // Like llama.cpp's detokenize: "▁" -> space, <0xNN> -> byte, and the space that
  // add_space_prefix put before the first text token is removed again.
  std::string Decode(std::span<const int32_t> ids, bool render_special = false) const override;
  const std::string& TokenString(int32_t id) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  int32_t bos_id() const override { return vocab_.bos; }
  int32_t eos_id() const override { return vocab_.eos; }
  bool add_bos_default() const override { return vocab_.add_bos; }
  void Digest(const DigestSink& add) const override;

 private:
  void EncodeText(const std::string& text, std::vector<int32_t>* out) const;
  void AppendBytes(std::string_view chars, std::vector<int32_t>* out) const;

  Vocab vocab_;
  SpecialTokenSplitter specials_;
  std::vector<float> scores_;  // [n_vocab]
  bool add_space_prefix_;
  int32_t byte_ids_[256];
  std::vector<std::string> pieces_;  // [n_vocab] decoded text of non-special tokens
};

}  // namespace kvaudit
