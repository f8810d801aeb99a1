// Byte-level BPE (GPT-2 style) as HF tokenizers' BPE model + ByteLevel pre-tokenizer/decoder and
// llama.cpp's llm_tokenizer_bpe_session run it: the text is cut at special tokens, split by the
// pre-tokenizer regexes, each piece's bytes are mapped to printable code points, and merges are
// applied lowest rank first (leftmost first among equal ranks) until none applies.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace kvaudit {

struct BpeMerge {
  int32_t left = -1;
  int32_t right = -1;
  int32_t result = -1;
};

// Resolves merge string pairs (rank = position) against the vocabulary. strict: a pair naming a
// token that is not in the vocabulary is an error (HF refuses such a tokenizer.json); otherwise
// it is skipped, as llama.cpp does for GGUF.
Expected<std::vector<BpeMerge>> ResolveMerges(const Vocab& vocab,
                                              const std::vector<std::pair<std::string, std::string>>& pairs,
                                              bool strict);

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  // ignore_merges: HF BPE `ignore_merges` (Llama-3): a pre-token that is itself in the vocabulary
  // becomes that one token without merging.
  ByteLevelBpeTokenizer(Vocab vocab, const std::vector<BpeMerge>& merges, PreTokenizer pretokenizer,
                        bool ignore_merges);

  std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special = true) const override;
  std::string Decode(std::span<const int32_t> ids, bool render_special = false) const override;
  const std::string& TokenString(int32_t id) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  int32_t bos_id() const override { return vocab_.bos; }
  int32_t eos_id() const override { return vocab_.eos; }
  bool add_bos_default() const override { return vocab_.add_bos; }
  void Digest(const DigestSink& add) const override;

 private:
  struct Scratch;
  void EncodeWord(std::string_view word, Scratch* scratch, std::vector<int32_t>* out) const;

  Vocab vocab_;
  SpecialTokenSplitter specials_;
  PreTokenizer pretokenizer_;
  bool ignore_merges_;
  int32_t byte_ids_[256];                                             // token of each single byte (-1 if absent)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left<<32|right) -> (rank, result)
  std::vector<std::string> pieces_;                                   // [n_vocab] decoded bytes of each normal token
};

}  // namespace kvaudit
