#include "quant/dequantize.h"

#include "base/status.h"

namespace kvaudit {

void DequantizeBlocksRef(QuantType t, const uint8_t* src, float* dst, int64_t n) {
  const QuantTraits& info = GetQuantTraits(t);
  KV_CHECK_MSG(IsBlockType(t), "DequantizeBlocksRef: not a block type");
  KV_CHECK(n >= 0 && n % info.block_elems == 0);
  info.dequantize_ref(src, dst, n);
}

// DequantizeBlocks, the SIMD twin, is in quant/dequantize_simd.cc.

}  // namespace kvaudit
