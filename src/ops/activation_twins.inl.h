// The scalar twins of the activation kernels (ops/activation.cc), as an include with no guard and
// no includes: activation.cc includes it once outside the kernel passes (ExpScalar & co.) and again
// inside the AVX2 and portable passes, whose Exp / SiluMul / ExpSubSum are these loops; in the AVX2
// pass std::fma is then the FMA instruction, not a libm call (softmax runs per attention key).
// Needs kLog2e, kLn2Hi, kLn2Lo, kExpLo, kExpHi, kP, BitsToFloat and ReduceLanesRef in scope.
// Exp16's arithmetic on one value, operation for operation: std::fma for each fmadd / fnmadd, the
// clamps with max/min's rule (x unless it is beyond the bound; a NaN x gives the bound),
// nearbyint = roundscale's round-to-nearest-even, ldexp = vscalefps (both exact or correctly
// rounded into the subnormals). So builds without AVX-512 compute the same bits.
inline float Exp1(float x) {
  x = x > kExpLo ? x : kExpLo;
  x = x < kExpHi ? x : kExpHi;
  const float k = std::nearbyint(x * kLog2e);
  float r = std::fma(-k, kLn2Hi, x);
  r = std::fma(-k, kLn2Lo, r);
  float p = kP[0];
  for (int i = 1; i < 6; ++i) p = std::fma(p, r, kP[i]);
  const float r2 = r * r;
  p = std::fma(p, r2, r + 1.0f);
  const int ki = static_cast<int>(k);
  // p in [0.7, 1.5): for these k the product with the power of two is normal, hence exact.
  if (ki > -126 && ki < 128) return p * BitsToFloat(static_cast<uint32_t>(ki + 127) << 23);
  return std::ldexp(p, ki);
}

inline void ExpTwin(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Exp1(x[i]);
}
inline void SiluMulTwin(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + Exp1(0.0f - gate[i])) * up[i];
}
inline float MaxOfTwin(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
inline float ExpSubSumTwin(float* x, int64_t n, float mx) {
  float lanes[16] = {};  // the SIMD version's 16 lane sums and tree
  for (int64_t i = 0; i < n; ++i) lanes[i % 16] += (x[i] = Exp1(x[i] - mx));
  return ReduceLanesRef(lanes);
}
