#include "io/dtype.h"

#include <limits>
#include <string>

#include "quant/quant_type.h"

namespace kvaudit {
namespace {

// A block type's row: its sizes are the number format's (quant/quant_type.h).
constexpr DTypeInfo Block(std::string_view name, QuantType q) {
  return {name, kQuantTable[static_cast<int>(q)].block_elems, kQuantTable[static_cast<int>(q)].block_bytes, true};
}

// One row per DType, in enum order; the file formats' spelling.
constexpr DTypeInfo kTable[kNumDTypes] = {
    {"F32", 1, 4, true},
    {"F16", 1, 2, true},
    {"BF16", 1, 2, true},
    {"F64", 1, 8, true},
    {"I8", 1, 1, false},
    {"I16", 1, 2, false},
    {"I32", 1, 4, false},
    {"I64", 1, 8, false},
    {"U8", 1, 1, false},
    {"BOOL", 1, 1, false},
    Block("Q8_0", QuantType::kQ8_0),
    Block("Q4_0", QuantType::kQ4_0),
    Block("Q4_1", QuantType::kQ4_1),
    Block("Q5_0", QuantType::kQ5_0),
    Block("Q5_1", QuantType::kQ5_1),
    Block("Q4_K", QuantType::kQ4_K),
    Block("Q5_K", QuantType::kQ5_K),
    Block("Q6_K", QuantType::kQ6_K),
    Block("Q2_K", QuantType::kQ2_K),
    Block("Q3_K", QuantType::kQ3_K),
    Block("IQ4_NL", QuantType::kIQ4_NL),
    Block("IQ4_XS", QuantType::kIQ4_XS),
    Block("MXFP4", QuantType::kMXFP4),
};
static_assert(static_cast<int>(DType::kMXFP4) + 1 == kNumDTypes, "kTable must cover every DType");

}  // namespace

const DTypeInfo& GetDTypeInfo(DType t) {
  const int i = static_cast<int>(t);
  KV_CHECK(i >= 0 && i < kNumDTypes);
  return kTable[i];
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kTable[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

Expected<uint64_t> ByteSize(DType t, int64_t n_elements) {
  const DTypeInfo& info = GetDTypeInfo(t);
  if (n_elements < 0) return BadInput("negative element count " + std::to_string(n_elements));
  if (n_elements % info.block_elems != 0) {
    return BadInput(std::to_string(n_elements) + " elements is not a multiple of the " + std::string(info.name) +
                    " block size " + std::to_string(info.block_elems));
  }
  // Up to 8 bytes per element: 2^62 F32 elements would wrap u64 to a small, plausible size
  // (found by gguf_fuzz, see docs/fuzzing.md), so check before multiplying.
  const uint64_t blocks = static_cast<uint64_t>(n_elements / info.block_elems);
  const uint64_t block_bytes = static_cast<uint64_t>(info.block_bytes);
  if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
    return BadInput(std::to_string(n_elements) + " " + std::string(info.name) +
                    " elements overflow a 64-bit byte size");
  }
  return blocks * block_bytes;
}

}  // namespace kvaudit
