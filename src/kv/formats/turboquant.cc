// TurboQuant row codecs (kv/formats/turboquant.h). The codec parts are compiled once. There is no
// block decoder: norm correction needs the whole row's codes, which a unit decoder does not see,
// so every kernel path dequantizes a row once (the one Dequantize below) and runs the scalar
// twins of codec_kernels.h compiled for that path (hardware FMA in the AVX2 and AVX-512 passes):
// the same operations, the same bits on every path.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/turboquant.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numbers>

#include "base/isa.h"
#include "kv/formats/codec_kernels.h"
#include "ops/dot.h"
#include "ops/hadamard.h"
#include "quant/ggml_blocks.h"  // LoadF16 / StoreF16: little-endian f16 fields

namespace kvaudit {
namespace {

// ---- The codebook: centroids.py solve_lloyd_max, operation for operation in double. ----

double GaussianPdf(double x, double sigma2) {
  return (1.0 / std::sqrt(2 * std::numbers::pi * sigma2)) * std::exp(-x * x / (2 * sigma2));
}

// _trapz(f, a, b, n=200): h = (b − a)/n, 0.5·(f(a) + f(b)) plus the inner points, times h.
template <class F>
double Trapezoid(F f, double a, double b) {
  constexpr int kSteps = 200;
  const double h = (b - a) / kSteps;
  double r = 0.5 * (f(a) + f(b));
  for (int i = 1; i < kSteps; ++i) r += f(a + i * h);
  return r * h;
}

struct Codebook {
  std::array<float, 16> centroids{};  // [2^bits] ascending
  std::array<float, 15> midpoints{};  // [2^bits − 1]
  int levels = 0;
};

Codebook SolveLloydMax(int d, int bits) {
  constexpr int kMaxIter = 200;
  constexpr double kTol = 1e-10;
  const int n_levels = 1 << bits;
  const double sigma2 = 1.0 / d;
  const double sigma = std::sqrt(sigma2);
  const auto pdf = [sigma2](double x) { return GaussianPdf(x, sigma2); };
  const double lo = -3.5 * sigma, hi = 3.5 * sigma;
  std::array<double, 16> c{};  // [n_levels]
  for (int i = 0; i < n_levels; ++i) c[i] = lo + (hi - lo) * (i + 0.5) / n_levels;
  for (int iter = 0; iter < kMaxIter; ++iter) {
    std::array<double, 17> edges{};  // [n_levels + 1]: lo·3, the midpoints, hi·3
    edges[0] = lo * 3;
    for (int i = 0; i + 1 < n_levels; ++i) edges[i + 1] = (c[i] + c[i + 1]) / 2.0;
    edges[n_levels] = hi * 3;
    std::array<double, 16> next{};
    double step = 0.0;
    for (int i = 0; i < n_levels; ++i) {
      const double a = edges[i], b = edges[i + 1];
      const double num = Trapezoid([&](double x) { return x * pdf(x); }, a, b);
      const double den = Trapezoid(pdf, a, b);
      next[i] = den > 1e-15 ? num / den : c[i];
      step = std::max(step, std::fabs(next[i] - c[i]));
    }
    if (step < kTol) break;  // the converged step itself is not adopted
    c = next;
  }
  Codebook book;
  book.levels = n_levels;
  for (int i = 0; i < n_levels; ++i) book.centroids[i] = static_cast<float>(c[i]);
  for (int i = 0; i + 1 < n_levels; ++i) book.midpoints[i] = (book.centroids[i] + book.centroids[i + 1]) / 2.0f;
  return book;
}

bool ValidRow(int64_t n) { return n >= kTurboQuantMinRow && n <= kTurboQuantMaxRow && (n & (n - 1)) == 0; }

const Codebook& Book(int d, int bits) {
  KV_CHECK_MSG(ValidRow(d) && (bits == 3 || bits == 4), "TurboQuant codebooks: d a power of two in [16, 1024]");
  constexpr int kSizes = 7;  // d = 16 .. 1024
  static std::array<Codebook, 2 * kSizes> books;
  static std::array<std::once_flag, 2 * kSizes> once;
  const int slot = (bits - 3) * kSizes + std::countr_zero(static_cast<unsigned>(d)) - 4;
  std::call_once(once[slot], [&] { books[slot] = SolveLloydMax(d, bits); });
  return books[slot];
}

// ---- Packing: LSB first (4-bit: element 2j in the low nibble of byte j; 3-bit: code i at bit 3i). ----

constexpr int64_t CodeBytes(int64_t n, int bits) { return n * bits / 8; }

template <int Bits>
void PackCodes(const uint8_t* codes, int64_t n, uint8_t* dst) {  // codes [n] -> dst [CodeBytes]
  if constexpr (Bits == 4) {
    for (int64_t j = 0; j < n / 2; ++j) dst[j] = static_cast<uint8_t>(codes[2 * j] | (codes[2 * j + 1] << 4));
  } else {
    for (int64_t g = 0; g < n / 8; ++g) {
      uint32_t w = 0;  // 8 codes, 24 bits
      for (int j = 0; j < 8; ++j) w |= static_cast<uint32_t>(codes[8 * g + j]) << (3 * j);
      dst[3 * g] = static_cast<uint8_t>(w), dst[3 * g + 1] = static_cast<uint8_t>(w >> 8);
      dst[3 * g + 2] = static_cast<uint8_t>(w >> 16);
    }
  }
}

template <int Bits>
int CodeAt(const uint8_t* packed, int64_t i) {
  if constexpr (Bits == 4) {
    return (packed[i / 2] >> (4 * (i & 1))) & 0xF;
  } else {
    const int64_t bit = 3 * i;
    const int64_t byte = bit / 8;
    // A code crosses into the next byte only when bit % 8 > 5, and then that byte is a code byte.
    const uint32_t pair = packed[byte] | (bit % 8 > 5 ? static_cast<uint32_t>(packed[byte + 1]) << 8 : 0u);
    return static_cast<int>((pair >> (bit % 8)) & 0x7);
  }
}

// ---- Keys: normalize, rotate, Lloyd-Max codes, f16 norm. ----

template <int Bits>
struct Mse {
  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(CodeBytes(n, Bits) + 2); }
  static double BitsPerElement(int64_t n, const CodecParams& p) { return 8.0 * RowBytes(n, p) / n; }

  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
    KV_CHECK_MSG(ValidRow(n), "TurboQuant rows: a power of two from 16 to 1024");
    const Codebook& book = Book(static_cast<int>(n), Bits);
    const float norm = std::sqrt(DotF32(x, x, n));
    const float denom = norm + kTurboQuantNormEps;
    alignas(64) float y[kTurboQuantMaxRow];  // [n] x̂, then x̂ · H/√n
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] / denom;
    HadamardRows(y, 1, n, static_cast<int>(n));
    uint8_t codes[kTurboQuantMaxRow];  // [n]
    for (int64_t i = 0; i < n; ++i) {
      int idx = 0;  // #{midpoints m : y >= m}; a NaN compares false: code 0
      while (idx + 1 < book.levels && y[i] >= book.midpoints[idx]) ++idx;
      codes[i] = static_cast<uint8_t>(idx);
    }
    PackCodes<Bits>(codes, n, dst);
    ggml::StoreF16(dst + CodeBytes(n, Bits), norm);
  }

  // Norm-corrected centroids times the norm, in the rotated basis (kv/formats/turboquant.h).
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
    KV_CHECK_MSG(ValidRow(n), "TurboQuant rows: a power of two from 16 to 1024");
    const Codebook& book = Book(static_cast<int>(n), Bits);
    for (int64_t i = 0; i < n; ++i) y[i] = book.centroids[CodeAt<Bits>(src, i)];
    const float inv = 1.0f / std::sqrt(DotF32(y, y, n) + kTurboQuantNcEps);
    const float norm = ggml::LoadF16(src + CodeBytes(n, Bits));
    for (int64_t i = 0; i < n; ++i) y[i] = (y[i] * inv) * norm;
  }
};

// ---- Values: min/max uniform codes, f16 scale and min. ----

template <int Bits>
struct Uniform {
  static constexpr int kQMax = (1 << Bits) - 1;
  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(CodeBytes(n, Bits) + 4); }
  static double BitsPerElement(int64_t n, const CodecParams& p) { return 8.0 * RowBytes(n, p) / n; }

  // floor(t + 0.5) by truncation of a non-negative t (the kernel's int32 cast); Triton's cast of
  // NaN is 0 and of +inf saturates: clamped like the others.
  static uint8_t Code(float x, float vmin, float scale) {
    const float t = (x - vmin) / scale + 0.5f;
    if (!(t >= 0.0f)) return 0;
    if (t >= static_cast<float>(kQMax)) return kQMax;
    return static_cast<uint8_t>(static_cast<int>(t));
  }

  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
    KV_CHECK_MSG(ValidRow(n), "TurboQuant rows: a power of two from 16 to 1024");
    float vmin = INFINITY, vmax = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {  // NaN left out
      vmin = std::fmin(vmin, x[i]);
      vmax = std::fmax(vmax, x[i]);
    }
    float scale = (vmax - vmin) / static_cast<float>(kQMax);
    if (!(scale > kTurboQuantMinValueScale)) scale = kTurboQuantMinValueScale;
    uint8_t codes[kTurboQuantMaxRow];  // [n]
    for (int64_t i = 0; i < n; ++i) codes[i] = Code(x[i], vmin, scale);
    PackCodes<Bits>(codes, n, dst);
    ggml::StoreF16(dst + CodeBytes(n, Bits), scale);
    ggml::StoreF16(dst + CodeBytes(n, Bits) + 2, vmin);
  }

  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
    KV_CHECK_MSG(ValidRow(n), "TurboQuant rows: a power of two from 16 to 1024");
    const float scale = ggml::LoadF16(src + CodeBytes(n, Bits));
    const float vmin = ggml::LoadF16(src + CodeBytes(n, Bits) + 2);
    for (int64_t i = 0; i < n; ++i) y[i] = std::fma(static_cast<float>(CodeAt<Bits>(src, i)), scale, vmin);
  }
};

template <class C, class Kernels>
RowCodec Make(std::string_view name) {
  return MakeRowCodec<Kernels>(name, kTurboQuantMinRow, C::RowBytes, C::BitsPerElement, C::Quantize, C::Dequantize);
}
}  // namespace

std::span<const float> TurboQuantCentroids(int d, int bits) {
  const Codebook& b = Book(d, bits);
  return {b.centroids.data(), static_cast<size_t>(b.levels)};
}
std::span<const float> TurboQuantMidpoints(int d, int bits) {
  const Codebook& b = Book(d, bits);
  return {b.midpoints.data(), static_cast<size_t>(b.levels - 1)};
}

}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/turboquant.cc"
#include "base/isa_passes.h"  // the scalar twins below, compiled once per kernel path

namespace kvaudit {
namespace {
template <class C>
const RowCodec& Codec(std::string_view name) {
  static const RowCodec codec[3] = {Make<C, isa_portable::Kernels<C>>(name), Make<C, isa_avx2::Kernels<C>>(name),
                                    Make<C, isa_avx512::Kernels<C>>(name)};
  return codec[static_cast<int>(ActiveIsa())];
}
template <class C>
const RowCodec& CodecRef(std::string_view name) {
  static const RowCodec codec = Make<C, RowKernelsRef<C::Dequantize>>(name);
  return codec;
}
}  // namespace

const RowCodec& TurboQuantMse4Codec() { return Codec<Mse<4>>("turboquant_mse4"); }
const RowCodec& TurboQuantMse4CodecRef() { return CodecRef<Mse<4>>("turboquant_mse4"); }
const RowCodec& TurboQuantMse3Codec() { return Codec<Mse<3>>("turboquant_mse3"); }
const RowCodec& TurboQuantMse3CodecRef() { return CodecRef<Mse<3>>("turboquant_mse3"); }
const RowCodec& TurboQuantUniform4Codec() { return Codec<Uniform<4>>("turboquant_uniform4"); }
const RowCodec& TurboQuantUniform4CodecRef() { return CodecRef<Uniform<4>>("turboquant_uniform4"); }
const RowCodec& TurboQuantUniform3Codec() { return Codec<Uniform<3>>("turboquant_uniform3"); }
const RowCodec& TurboQuantUniform3CodecRef() { return CodecRef<Uniform<3>>("turboquant_uniform3"); }

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"

namespace {
// The scalar twins compiled for this path (codec_kernels_simd.inl.h includes them in the AVX2 and
// AVX-512 passes; the portable pass uses kvaudit's own).
template <class C>
using Kernels = RowKernelsRef<C::Dequantize>;
}  // namespace

#endif  // KVAUDIT_ISA_PASS
