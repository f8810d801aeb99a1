// Tokenizer::FromGguf: the tokenizer.ggml.* metadata as llama.cpp's llama_vocab::impl::load reads
// it. model "gpt2" -> byte-level BPE with the pre type's regexes; "llama" -> SentencePiece BPE.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "io/gguf.h"
#include "tokenizer/bpe_byte_level.h"
#include "tokenizer/bpe_spm.h"
#include "tokenizer/gguf_pre_types.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

Error Fail(const GgufFile& gguf, const std::string& what) { return BadInput(gguf.label() + ": " + what); }

// Optional integer key: `fallback` when absent; an id outside the vocabulary is an error.
Expected<int32_t> OptionalTokenId(const GgufFile& gguf, const std::string& key, int32_t fallback, int32_t n_vocab) {
  if (!gguf.Has(key)) return fallback < n_vocab ? fallback : -1;
  KV_ASSIGN_OR_RETURN(int64_t id, gguf.GetInt(key));
  if (id < 0 || id >= n_vocab) {
    return Fail(gguf, key + " = " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(n_vocab) +
                          " tokens");
  }
  return static_cast<int32_t>(id);
}

Expected<bool> OptionalBool(const GgufFile& gguf, const std::string& key, bool fallback) {
  if (!gguf.Has(key)) return fallback;
  return gguf.GetBool(key);
}

Status LoadVocab(const GgufFile& gguf, Vocab* vocab) {
  KV_ASSIGN_OR_RETURN(vocab->tokens, gguf.GetStringArray("tokenizer.ggml.tokens"));
  if (vocab->tokens.empty()) return Fail(gguf, "tokenizer.ggml.tokens is empty");
  vocab->attrs.assign(vocab->tokens.size(), kAttrNormal);
  if (gguf.Has("tokenizer.ggml.token_type")) {
    KV_ASSIGN_OR_RETURN(auto types, gguf.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() < vocab->tokens.size()) {
      return Fail(gguf, "tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " +
                            std::to_string(vocab->tokens.size()) + " tokens");
    }
    for (size_t i = 0; i < vocab->tokens.size(); ++i) vocab->attrs[i] = AttrFromGgufTokenType(types[i]);
  }
  vocab->IndexTokens();
  return Status::Ok();
}

// llama.cpp gives every special token of Phi-3 models rstrip (except <unk>, <s>, <|endoftext|>),
// chosen by general.name, because the GGUF has no per-token strip flags.
void ApplyPhi3Rstrip(const GgufFile& gguf, Vocab* vocab) {
  if (!gguf.Has("general.name")) return;
  auto name = gguf.GetString("general.name");
  if (!name) return;
  std::string lower = *name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("phi-3") == std::string::npos && lower.find("phi3") == std::string::npos) return;
  for (int32_t id = 0; id < vocab->size(); ++id) {
    if (vocab->attrs[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) vocab->attrs[id] |= kAttrRstrip;
  }
  if (int32_t id = vocab->Find("</s>"); id >= 0) vocab->attrs[id] |= kAttrRstrip;
  for (const char* keep : {"<unk>", "<s>", "<|endoftext|>"}) {
    if (int32_t id = vocab->Find(keep); id >= 0) vocab->attrs[id] &= ~kAttrRstrip;
  }
}

Expected<std::unique_ptr<Tokenizer>> LoadSpm(const GgufFile& gguf, Vocab vocab) {
  const int32_t n = vocab.size();
  // llama.cpp's SPM defaults: <unk>=0, <s>=1, </s>=2, add BOS, add a space prefix.
  KV_ASSIGN_OR_RETURN(vocab.bos, OptionalTokenId(gguf, "tokenizer.ggml.bos_token_id", 1, n));
  KV_ASSIGN_OR_RETURN(vocab.eos, OptionalTokenId(gguf, "tokenizer.ggml.eos_token_id", 2, n));
  KV_ASSIGN_OR_RETURN(vocab.unk, OptionalTokenId(gguf, "tokenizer.ggml.unknown_token_id", 0, n));
  KV_ASSIGN_OR_RETURN(vocab.add_bos, OptionalBool(gguf, "tokenizer.ggml.add_bos_token", true));
  KV_ASSIGN_OR_RETURN(bool space_prefix, OptionalBool(gguf, "tokenizer.ggml.add_space_prefix", true));
  std::vector<float> scores(vocab.tokens.size(), 0.0f);
  if (gguf.Has("tokenizer.ggml.scores")) {
    KV_ASSIGN_OR_RETURN(auto s, gguf.GetFloatArray("tokenizer.ggml.scores"));
    if (s.size() < scores.size()) {
      return Fail(gguf, "tokenizer.ggml.scores has " + std::to_string(s.size()) + " entries for " +
                            std::to_string(scores.size()) + " tokens");
    }
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<float>(s[i]);
  }
  if (vocab.add_bos && vocab.bos < 0) return Fail(gguf, "add_bos_token is set but there is no BOS token");
  ApplyPhi3Rstrip(gguf, &vocab);
  return std::unique_ptr<Tokenizer>(std::make_unique<SpmTokenizer>(std::move(vocab), std::move(scores), space_prefix));
}

Expected<std::unique_ptr<Tokenizer>> LoadByteLevel(const GgufFile& gguf, Vocab vocab) {
  const int32_t n = vocab.size();
  std::string pre;
  if (gguf.Has("tokenizer.ggml.pre")) {
    KV_ASSIGN_OR_RETURN(pre, gguf.GetString("tokenizer.ggml.pre"));
  }
  auto pre_type = LookupGgufPreType(pre);
  if (!pre_type) return Fail(gguf, pre_type.error().message);
  PreTokenizer pretok;
  for (const std::string& re : pre_type->regexes) {
    if (Status s = pretok.AddRegex(re); !s) return Fail(gguf, s.error().message);
  }
  KV_ASSIGN_OR_RETURN(auto merge_strings, gguf.GetStringArray("tokenizer.ggml.merges"));
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(merge_strings.size());
  for (const std::string& m : merge_strings) {
    const size_t sp = m.find(' ', 1);  // llama.cpp: the first space after the first character
    if (sp == std::string::npos) continue;
    pairs.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }
  KV_ASSIGN_OR_RETURN(auto merges, ResolveMerges(vocab, pairs, /*strict=*/false));
  KV_ASSIGN_OR_RETURN(vocab.bos, OptionalTokenId(gguf, "tokenizer.ggml.bos_token_id", -1, n));
  KV_ASSIGN_OR_RETURN(vocab.eos, OptionalTokenId(gguf, "tokenizer.ggml.eos_token_id", -1, n));
  KV_ASSIGN_OR_RETURN(vocab.add_bos, OptionalBool(gguf, "tokenizer.ggml.add_bos_token", pre_type->add_bos));
  if (vocab.add_bos && vocab.bos < 0) return Fail(gguf, "add_bos_token is set but there is no BOS token");
  return std::unique_ptr<Tokenizer>(
      std::make_unique<ByteLevelBpeTokenizer>(std::move(vocab), merges, std::move(pretok), pre_type->ignore_merges));
}

}  // namespace

Expected<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& gguf) {
  KV_ASSIGN_OR_RETURN(std::string model, gguf.GetString("tokenizer.ggml.model"));
  if (model != "gpt2" && model != "llama") {
    return Fail(gguf, "tokenizer.ggml.model '" + model +
                          "' is not supported; hint: kvaudit reads 'gpt2' (byte-level BPE) and 'llama' "
                          "(SentencePiece BPE) vocabularies");
  }
  Vocab vocab;
  KV_RETURN_IF_ERROR(LoadVocab(gguf, &vocab));
  if (model == "llama") return LoadSpm(gguf, std::move(vocab));
  return LoadByteLevel(gguf, std::move(vocab));
}

}  // namespace kvaudit
