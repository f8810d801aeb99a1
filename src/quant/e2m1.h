// E2M1, the 4-bit float of OCP Microscaling v1.0 (fp4: 1 sign, 2 exponent, 1 mantissa bit, no
// inf or NaN): code bit 3 is the sign, bits 0-2 index the magnitudes 0 0.5 1 1.5 2 3 4 6. The
// element type of ggml's mxfp4 weights (quant/mxfp4.cc keeps ggml's doubled integer table),
// NVIDIA's nvfp4 and SGLang's fp4_mx_block16 KV caches (kv/formats/nvfp4.h, fp4_mx_block16.h).
#pragma once

#include <cmath>
#include <cstdint>

namespace kvaudit {

// Code -> value (code 8 is -0).
inline constexpr float kE2M1Values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                          -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
inline constexpr float kE2M1Max = 6.0f;

// f32 -> E2M1 as PTX cvt.rn.satfinite.e2m1x2.f32 converts: round to nearest, ties to even
// (0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4), saturating to ±6, the
// sign kept (a negative that rounds to 0 is code 8). Written as vLLM's software twin of that
// instruction spells the thresholds (csrc/nvfp4_kv_cache_kernels.cu@5d11149b, "match[es]
// cvt.rn.satfinite.e2m1x2.f32, including ties-to-even boundaries"). NaN: every comparison is
// false, so ±6 as that twin gives; what the instruction does with NaN is not documented.
inline uint8_t E2M1FromF32Rn(float y) {
  const float a = std::fabs(y);
  uint8_t m;
  if (a <= 0.25f) {
    m = 0;
  } else if (a < 0.75f) {
    m = 1;
  } else if (a <= 1.25f) {
    m = 2;
  } else if (a < 1.75f) {
    m = 3;
  } else if (a <= 2.5f) {
    m = 4;
  } else if (a < 3.5f) {
    m = 5;
  } else if (a <= 5.0f) {
    m = 6;
  } else {
    m = 7;
  }
  return static_cast<uint8_t>((std::signbit(y) ? 8 : 0) | m);
}

}  // namespace kvaudit
