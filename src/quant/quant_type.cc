#include "quant/quant_type.h"

#include "base/status.h"

namespace kvaudit {

const QuantTraits& GetQuantTraits(QuantType t) {
  const int i = static_cast<int>(t);
  KV_CHECK(i >= 0 && i < kNumQuantTypes);
  return kQuantTable[i];
}

size_t QuantRowBytesChecked(QuantType t, int64_t cols) {
  const QuantTraits& info = GetQuantTraits(t);
  KV_CHECK_MSG(cols >= 0 && cols % info.block_elems == 0, "a block-type row must be a whole number of blocks");
  return static_cast<size_t>(cols / info.block_elems) * static_cast<size_t>(info.block_bytes);
}

}  // namespace kvaudit
