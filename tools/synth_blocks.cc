#include "synth_blocks.h"

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "base/status.h"

namespace kvaudit::synth {
namespace {

// Block layouts (ggml-common.h); the sizes are the ones kvaudit's reader checks (io/dtype.cc).
constexpr int kQ8_0Bytes = 34;   // block_q8_0 {f16 d; i8 qs[32]}
constexpr int kQ4_KBytes = 144;  // block_q4_K {f16 d, dmin; u8 scales[12]; u8 qs[128]}
constexpr int kQ6_KBytes = 210;  // block_q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}
static_assert(kQ8_0Bytes == 2 + 32 && kQ4_KBytes == 2 + 2 + 12 + 128 && kQ6_KBytes == 128 + 64 + 16 + 2);

// std of a uniform integer on [lo, hi]: sqrt(((hi - lo + 1)^2 - 1) / 12).
double UniformIntStd(int lo, int hi) {
  const double w = hi - lo + 1;
  return std::sqrt((w * w - 1) / 12);
}

// q8_0: y = d * q, q uniform on [-127, 127] (ggml's quantizer never writes -128).
const uint16_t kQ8_0D = F32ToF16(static_cast<float>(kWeightStd / UniformIntStd(-127, 127)));
// q4_K: y = (d*sc)*q - dmin*m, q uniform on [0, 15]; every sub-block has sc = m = kQ4Scale and
// dmin = 7.5 d, so y = d*sc*(q - 7.5): mean 0.
constexpr int kQ4Scale = 32;
const double kQ4D = kWeightStd / (kQ4Scale * UniformIntStd(0, 15));
const uint16_t kQ4_KD = F32ToF16(static_cast<float>(kQ4D));
const uint16_t kQ4_KDmin = F32ToF16(static_cast<float>(kQ4D * 7.5));
// q6_K: y = d * sc * (q - 32), q uniform on [0, 63]; every sub-block scale is kQ6Scale.
constexpr int kQ6Scale = 8;
const uint16_t kQ6_KD = F32ToF16(static_cast<float>(kWeightStd / (kQ6Scale * UniformIntStd(-32, 31))));
// f16/bf16: uniform on [-a, a], std a / sqrt(3).
const double kUniformHalfWidth = kWeightStd * std::sqrt(3.0);

void Store16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

void RandomBytes(Rng& rng, uint8_t* p, int n) {  // n a multiple of 8
  for (int i = 0; i < n; i += 8) {
    const uint64_t r = rng.Next();
    std::memcpy(p + i, &r, 8);
  }
}

// The 12 scale bytes of q4_K for eight (scale, min) pairs of 6 bits: the inverse of ggml's
// get_scale_min_k4 (pairs 0..3 in the low 6 bits of bytes 0..3 / 4..7; pairs 4..7 with their low
// 4 bits in bytes 8..11 and their top 2 bits in the top bits of bytes 0..7).
void PackScaleMinK4(const int sc[8], const int m[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

void FillQ8_0(uint64_t nb, Rng& rng, uint8_t* b) {
  for (uint64_t i = 0; i < nb; ++i, b += kQ8_0Bytes) {
    Store16(b, kQ8_0D);
    RandomBytes(rng, b + 2, 32);
    for (int j = 2; j < kQ8_0Bytes; ++j) {
      if (b[j] == 0x80) b[j] = 0x81;  // -128 -> -127
    }
  }
}

void FillQ4_K(uint64_t nb, Rng& rng, uint8_t* b) {
  uint8_t scales[12];
  const int sc[8] = {kQ4Scale, kQ4Scale, kQ4Scale, kQ4Scale, kQ4Scale, kQ4Scale, kQ4Scale, kQ4Scale};
  PackScaleMinK4(sc, sc, scales);
  for (uint64_t i = 0; i < nb; ++i, b += kQ4_KBytes) {
    Store16(b, kQ4_KD);
    Store16(b + 2, kQ4_KDmin);
    std::memcpy(b + 4, scales, 12);
    RandomBytes(rng, b + 16, 128);
  }
}

void FillQ6_K(uint64_t nb, Rng& rng, uint8_t* b) {
  for (uint64_t i = 0; i < nb; ++i, b += kQ6_KBytes) {
    RandomBytes(rng, b, 128 + 64);  // ql, qh: every 6-bit value is valid
    std::memset(b + 192, kQ6Scale, 16);
    Store16(b + 208, kQ6_KD);
  }
}

// MXFP4 (ggml-common.h block_mxfp4: an E8M0 byte e, then 16 bytes of nibble codes): uniform codes
// over kvalues_mxfp4 have std ~5.85 (E[v²] = 34.25) in units of 2^(e-128); e = 120 gives ~0.023.
constexpr int kMxfp4Bytes = 17;
constexpr uint8_t kMxfp4E = 120;

void FillMxfp4(uint64_t nb, Rng& rng, uint8_t* b) {
  for (uint64_t i = 0; i < nb; ++i, b += kMxfp4Bytes) {
    b[0] = kMxfp4E;
    RandomBytes(rng, b + 1, 16);
  }
}

template <uint16_t (*kConvert)(float)>
void FillHalf(uint64_t n, Rng& rng, uint8_t* dst) {
  for (uint64_t i = 0; i < n; i += 4) {
    uint64_t r = rng.Next();
    for (int k = 0; k < 4; ++k, r >>= 16) {
      const double u = (static_cast<double>(r & 0xFFFF) + 0.5) / 65536.0;  // (0, 1)
      Store16(dst + 2 * (i + k), kConvert(static_cast<float>((2 * u - 1) * kUniformHalfWidth)));
    }
  }
}

}  // namespace

Rng::Rng(uint64_t seed) {
  for (int k = 0; k < 4; ++k) s_[k] = SplitMix64(seed + static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull);
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void FillRandom(DType t, uint64_t n, Rng& rng, uint8_t* dst) {
  KV_CHECK(n % 4 == 0);
  switch (t) {
    case DType::kF32:
      for (uint64_t i = 0; i < n; ++i) {
        const float one = 1.0f;
        std::memcpy(dst + 4 * i, &one, 4);
      }
      return;
    case DType::kF16: return FillHalf<F32ToF16>(n, rng, dst);
    case DType::kBF16: return FillHalf<F32ToBF16>(n, rng, dst);
    case DType::kQ8_0: KV_CHECK(n % 32 == 0); return FillQ8_0(n / 32, rng, dst);
    case DType::kQ4_K: KV_CHECK(n % 256 == 0); return FillQ4_K(n / 256, rng, dst);
    case DType::kQ6_K: KV_CHECK(n % 256 == 0); return FillQ6_K(n / 256, rng, dst);
    case DType::kMXFP4: KV_CHECK(n % 32 == 0); return FillMxfp4(n / 32, rng, dst);
    default: KV_CHECK_MSG(false, "FillRandom: unsupported type");
  }
}

}  // namespace kvaudit::synth
