#include "tokenizer/gguf_pre_types.h"

#include <algorithm>
#include <initializer_list>

#include "tokenizer/pretokenizer.h"

namespace kvaudit {
namespace {

bool OneOf(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

// llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT: used for "default" or a missing pre key.
constexpr const char* kDefaultPatterns[] = {
    R"([\p{P}\$\+<=>\^~\|]+)",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
    R"(\p{N}+)",
    R"([0-9][0-9][0-9])",
};

}  // namespace

Expected<GgufPreType> LookupGgufPreType(const std::string& pre) {
  GgufPreType t;
  if (pre.empty() || pre == "default") {
    t.regexes.assign(std::begin(kDefaultPatterns), std::end(kDefaultPatterns));
  } else if (OneOf(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"})) {
    t.regexes = {kLlama3Pattern};
    t.ignore_merges = true;  // Llama-3's tokenizer.json sets "ignore_merges": true
    t.add_bos = true;
  } else if (OneOf(pre, {"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"})) {
    t.regexes = {kLlama3Pattern};
  } else if (OneOf(pre,
                   {"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de",
                    "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais", "exaone4", "trillion", "granite-docling"})) {
    t.regexes = {kGpt2Pattern};
  } else if (OneOf(pre, {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan"})) {
    t.regexes = {kQwen2Pattern};
  } else if (OneOf(pre, {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})) {
    t.regexes = {R"(\p{N})", kGpt2Pattern};
  } else if (OneOf(pre, {"poro-chat", "bloom", "gpt3-finnish"})) {
    t.regexes = {R"( ?[^(\s|.,!?…。，、।۔،)]+)"};
  } else if (pre == "falcon") {
    t.regexes = {R"([\p{P}\$\+<=>\^~\|`]+)",
                 R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))", R"([0-9][0-9][0-9])"};
  } else if (pre == "deepseek-coder") {
    t.regexes = {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([一-龥ࠀ-一가-퟿]+)", R"(\p{N})"};
  } else {
    return BadInput("unsupported tokenizer.ggml.pre '" + pre +
                    "'; hint: supported pre-tokenizers are gpt-2, llama-bpe (llama3), qwen2, starcoder, "
                    "falcon, deepseek-coder, bloom, default and their aliases");
  }
  return t;
}

}  // namespace kvaudit
