#include "kv/formats/asym_group_quant.h"

#include <cassert>
#include <cmath>
#include <cstring>

#include "base/half.h"

namespace kvaudit {
namespace {

// f32 -> nearest f16 value, saturating at ±65504 instead of overflowing to inf.
inline float ToF16Value(float v) {
  constexpr float kF16Max = 65504.0f;
  if (v > kF16Max) v = kF16Max;
  if (v < -kF16Max) v = -kF16Max;
  return F16ToF32(F32ToF16(v));
}

// Round t ∈ [0, qmax] to the nearest integer, ties to even (torch.round), exactly and independent of
// the FP environment's rounding mode.
inline uint32_t RoundHalfEven(float t) {
  uint32_t m = static_cast<uint32_t>(t);
  const float rem = t - static_cast<float>(m);
  if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
  return m;
}

}  // namespace

void AsymQuantizeGroup(const float* x, int64_t n, int64_t stride, int bits, uint8_t* codes, float* scale, float* min) {
  assert(AsymBitsValid(bits) && n > 0);
  const float qmax = static_cast<float>((1u << bits) - 1u);
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) {
    const float v = x[i * stride];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  const float mn = ToF16Value(lo);
  // hi > mn also guards the case where f16 rounding moved mn above every value of the group.
  const float s = (hi > lo && hi > mn) ? ToF16Value((hi - mn) / qmax) : 0.0f;
  *min = mn;
  *scale = s;
  std::memset(codes, 0, static_cast<size_t>(AsymCodeBytes(n, bits)));
  if (s == 0.0f) return;  // constant group: all codes 0, x̂ = mn (KIVI would produce NaN here)
  const int per_byte = 8 / bits;
  for (int64_t i = 0; i < n; ++i) {
    float t = (x[i * stride] - mn) / s;  // KIVI: (x − mn) / scale, divided, not multiplied by 1/scale
    if (!(t > 0.0f)) t = 0.0f;           // clamp (NaN-safe) ...
    if (t > qmax) t = qmax;
    const uint32_t q = RoundHalfEven(t);  // ... then round half to even
    codes[i / per_byte] |= static_cast<uint8_t>(q << (bits * (i % per_byte)));
  }
}

void AsymDequantizeGroup(const uint8_t* codes, int64_t n, int bits, float scale, float min, float* y, int64_t stride) {
  assert(AsymBitsValid(bits));
  for (int64_t i = 0; i < n; ++i)
    y[i * stride] = std::fma(static_cast<float>(AsymCode(codes, i, bits)), scale, min);  // one rounding, pinned
}

}  // namespace kvaudit
