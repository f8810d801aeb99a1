// The hashes a resumable run's fingerprint is made of (eval's and probe's progress.jsonl headers):
// a rerun into the same --out refuses to mix results when any input they cover changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvaudit {

class Model;

// 64-bit hashes for the fingerprint (not cryptographic: they detect accidents, not attacks).
uint64_t HashBytes(const void* data, size_t n, uint64_t seed);
// Config numbers, RoPE frequencies and every weight byte as loaded: any changed value changes it.
// The model must have its weights.
uint64_t HashModel(const Model& model);
// Config numbers, RoPE frequencies and the tokenizer as loaded (Tokenizer::Digest: vocabulary,
// merges or scores, pre-tokenizer): the identity of a model loaded without weights. Any model.
uint64_t HashModelConfigTokenizer(const Model& model);

// results.json's model_hash and model_hash_kind: "weights" (HashModel) for a model with its
// weights, "config+tokenizer" (HashModelConfigTokenizer) for one loaded for tokenizing.
inline constexpr const char* kHashKindWeights = "weights";
inline constexpr const char* kHashKindConfigTokenizer = "config+tokenizer";
struct ModelIdentity {
  std::string hash;  // hex
  std::string kind;
};
ModelIdentity IdentifyModel(const Model& model);
uint64_t HashWindows(const std::vector<std::vector<int32_t>>& windows);
std::string HexHash(uint64_t h);

}  // namespace kvaudit
