// Random but valid weight bytes in ggml's block formats (ggml/src/ggml-common.h) and 16-bit
// floats. The quant bits are uniform random; each block's f16 scales are fixed so that the
// dequantized weights have mean ~0 and std ~kWeightStd (what a trained model's matrices roughly
// have, so activations stay finite through every layer). Random weights: the model's outputs
// are meaningless, only its size and speed are real.
#pragma once

#include <cstdint>

#include "io/dtype.h"

namespace kvaudit::synth {

inline constexpr double kWeightStd = 0.02;

// xoshiro256** (Blackman & Vigna, https://prng.di.unimi.it/xoshiro256starstar.c), seeded through
// splitmix64 as its authors recommend. Fast, and the same seed gives the same stream everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next() {
    const uint64_t r = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return r;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// splitmix64 step (Steele, Lea & Flood 2014): a seed per tensor from (seed, index).
uint64_t SplitMix64(uint64_t x);

// dst: n elements of type t (n a multiple of t's block size and of 4) drawn from rng; writes
// ByteSize(t, n) bytes. f32 is written as 1.0 (RMSNorm weights); types: F32 F16 BF16 Q8_0 Q4_K Q6_K MXFP4.
void FillRandom(DType t, uint64_t n, Rng& rng, uint8_t* dst);

}  // namespace kvaudit::synth
