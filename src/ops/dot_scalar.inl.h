// The canonical dot's scalar form (ops/dot.h), as an include with no guard and no includes of its
// own (needs <cmath>, <cstdint>): ops/dot.h includes it once in namespace kvaudit, and
// ops/dot_simd.inl.h again inside each kernel pass. The same source in every copy, so the same bits.
// The tree over 16 lane values a[16].
inline float ReduceLanesRef(const float* a) {
  float b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i) b[i] = a[i] + a[i + 8];
  for (int i = 0; i < 4; ++i) c[i] = b[i] + b[i + 4];
  for (int i = 0; i < 2; ++i) d[i] = c[i] + c[i + 2];
  return d[0] + d[1];
}

// Scalar emulation of the canonical dot; b_at(i) gives b_i as f32 (exact upcasts only).
// (The full 16-element steps carry no tail test, so compilers vectorize them across the lanes.)
template <class BAt>
inline float DotCanonicalScalar(const float* a, BAt b_at, int64_t n) {
  float acc[16] = {};
  int64_t i0 = 0;
  for (; i0 + 16 <= n; i0 += 16) {
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(a[i0 + l], b_at(i0 + l), acc[l]);
  }
  if (i0 < n) {
    for (int l = 0; l < 16; ++l) {
      const int64_t i = i0 + l;
      acc[l] = i < n ? std::fma(a[i], b_at(i), acc[l]) : std::fma(0.0f, 0.0f, acc[l]);
    }
  }
  return ReduceLanesRef(acc);
}
inline float DotCanonicalScalar(const float* a, const float* b, int64_t n) {
  return DotCanonicalScalar(
      a, [b](int64_t i) { return b[i]; }, n);
}
