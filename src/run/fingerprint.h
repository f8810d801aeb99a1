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
uint64_t HashModel(const Model& model);
uint64_t HashWindows(const std::vector<std::vector<int32_t>>& windows);
std::string HexHash(uint64_t h);

}  // namespace kvaudit
