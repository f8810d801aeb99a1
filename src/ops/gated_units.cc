#include "ops/gated_units.h"

#include <algorithm>
#include <cmath>

namespace kvaudit {

void GeluTanhMul(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    const float inner = kSqrt2OverPi * (x + kCubic * (x * x * x));
    out[i] = (0.5f * x * (1.0f + std::tanh(inner))) * up[i];
  }
}

void ClampedSwigluMul(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit);
    const float u = std::clamp(up[i], -kLimit, kLimit);
    out[i] = (g / (1.0f + std::exp(-kAlpha * g))) * (u + 1.0f);
  }
}

}  // namespace kvaudit
