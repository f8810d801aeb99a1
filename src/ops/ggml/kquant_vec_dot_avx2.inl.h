// The AVX2 path's K-quant and iq4_xs vec_dots (ops/ggml/kquant_vec_dot.cc), as an include with no
// guard and no includes: kquant_vec_dot.cc includes it in the AVX2 and AVX-512 passes, where the
// scalar twins' helpers (MinProducts, LoadBlock) and ops/ggml/hsum_avx2.inl.h's HSum8V are visible.
//
// Each kernel forms the scalar twin's 8 int32 lanes per super-block with the AVX2 branch's
// instructions (ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/quants.c@de3ff815): maddubs of
// unsigned codes with q8 (pairs to int16, no saturation: bounds in kquant_vec_dot.cc), madd with the
// group's scale (pairs to int32), add_epi32. Integer sums are exact, so the lanes are the twin's
// whatever the order; the f32 steps (the fmas per block, HSum8V = Hsum8, the mins) are the twin's, in order.
namespace {

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Lanes 0..3 (bytes 0..15 of a chunk) scaled by lo, lanes 4..7 (bytes 16..31) by hi.
inline __m256i ScalePair(int lo, int hi) { return _mm256_set_m128i(_mm_set1_epi16(hi), _mm_set1_epi16(lo)); }

// lanes + madd(maddubs(u, q8), scale): AddChunk of the scalar twin (u unsigned bytes).
inline __m256i AddChunkV(__m256i lanes, __m256i u, const int8_t* q8, __m256i scale) {
  return _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(u, Load256(q8)), scale));
}

// The 2-bit plane `plane` (0..3) of 32 bytes: (bytes >> 2·plane) & 3 (16-bit shifts, then masked).
inline __m256i Plane2(__m256i bytes, int plane) {
  return _mm256_and_si256(_mm256_srli_epi16(bytes, 2 * plane), _mm256_set1_epi8(3));
}

// Bit `bit` of each of 32 bytes, moved to bit `to`: 0 or 1 << to per byte.
inline __m256i BitOf(__m256i bytes, int bit, int to) {
  return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bytes, bit), _mm256_set1_epi8(1)), to);
}

// acc + d·f32(lanes), one fma per lane (cvtepi32_ps: exact, |lane| < 2^24).
inline __m256 FmaLanesV(float d, __m256i lanes, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);
}

// Q2Lanes: mins by madd_epi16(bsums, mins of the 16 groups); chunk c = plane c % 4 of
// qs[32·(c/4)..], groups 2c and 2c + 1 (low nibbles of scales).
void Q2LanesV(const BlockQ2_K& w, const BlockQ8_K& x, __m256i* mins, __m256i* lanes) {
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales));  // [16]
  const __m256i min16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(0x0F)));
  *mins = _mm256_madd_epi16(Load256(x.bsums), min16);
  __m256i sum = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m256i code = Plane2(Load256(w.qs + 32 * (c / 4)), c % 4);
    sum = AddChunkV(sum, code, x.qs + 32 * c, ScalePair(w.scales[2 * c] & 0x0F, w.scales[2 * c + 1] & 0x0F));
  }
  *lanes = sum;
}

// Q3Lanes: code = low − 4·(hmask bit c clear), formed as maddubs(low, q8) − maddubs(4·clear, q8)
// (the AVX2 branch's order; int16 pairs <= 768 and 1024: the difference cannot wrap).
__m256i Q3LanesV(const BlockQ3_K& w, const BlockQ8_K& x) {
  const __m256i hmask = Load256(w.hmask);
  __m256i sum = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m256i low = Plane2(Load256(w.qs + 32 * (c / 4)), c % 4);
    const __m256i four = _mm256_xor_si256(BitOf(hmask, c, 2), _mm256_set1_epi8(4));  // 4 where clear
    const __m256i q8 = Load256(x.qs + 32 * c);
    const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(low, q8), _mm256_maddubs_epi16(four, q8));
    const __m256i scale = ScalePair(ScaleK3(2 * c, w.scales), ScaleK3(2 * c + 1, w.scales));
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, scale));
  }
  return sum;
}

// Q45Lanes: chunk c = nibble plane c % 2 of qs[32·(c/2)..], plus (q5_K) bit c of qh as bit 4.
__m256i Q45LanesV(const uint8_t* scales, const uint8_t* qs, const uint8_t* qh, const BlockQ8_K& x) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i high = qh != nullptr ? Load256(qh) : _mm256_setzero_si256();
  __m256i sum = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m256i bytes = Load256(qs + 32 * (c / 2));
    __m256i code = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(bytes, 4) : bytes, m4);
    if (qh != nullptr) code = _mm256_or_si256(code, BitOf(high, c, 4));
    int sc, min;
    ScaleMinK4(c, scales, &sc, &min);
    sum = AddChunkV(sum, code, x.qs + 32 * c, _mm256_set1_epi16(static_cast<int16_t>(sc)));
  }
  return sum;
}

// Iq4XsLanes: mul_add_epi8's maddubs(|v|, sign(q8, v)) (sign_epi8 wraps -(-128) to -128, as the
// twin does); low nibbles of qs[16c..] are elements 0..15 of sub-block c, high nibbles 16..31.
__m256i Iq4XsLanesV(const BlockIq4Xs& w, const BlockQ8_K& x) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlValues));
  const __m256i values = _mm256_set_m128i(table, table);
  __m256i sum = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + 16 * c));
    const __m256i nibbles =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
    const __m256i v = _mm256_shuffle_epi8(values, nibbles);
    const __m256i sq8 = _mm256_sign_epi8(Load256(x.qs + 32 * c), v);
    const int ls = (((w.scales_l[c / 2] >> (4 * (c % 2))) & 0x0F) | (((w.scales_h >> (2 * c)) & 3) << 4)) - 32;
    const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(v), sq8);
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, _mm256_set1_epi16(static_cast<int16_t>(ls))));
  }
  return sum;
}

}  // namespace

float DotQ2_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K block = LoadBlock<BlockQ2_K>(w, b);
    __m256i mins, lanes;  // [8] Σ min·bsum, [8] Σ scale·code·q8
    Q2LanesV(block, x[b], &mins, &lanes);
    const float d = x[b].d * F16ToF32(block.d);
    const float dmin = -x[b].d * F16ToF32(block.dmin);
    acc = FmaLanesV(dmin, mins, acc);  // the mins first, then the scales, as the twin
    acc = FmaLanesV(d, lanes, acc);
  }
  return HSum8V(acc);
}

float DotQ3_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_K block = LoadBlock<BlockQ3_K>(w, b);
    acc = FmaLanesV(x[b].d * F16ToF32(block.d), Q3LanesV(block, x[b]), acc);
  }
  return HSum8V(acc);
}

float DotQ4_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_m = _mm_setzero_ps();  // [4] the mins' lanes
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_K block = LoadBlock<BlockQ4_K>(w, b);
    const float d = x[b].d * F16ToF32(block.d);
    const float dmin = -x[b].d * F16ToF32(block.dmin);
    int32_t prod[4];  // [4] Σ min·bsum pairs
    MinProducts(block.scales, x[b], prod);
    const __m128 prod_f = _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(prod)));
    acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), prod_f, acc_m);
    acc = FmaLanesV(d, Q45LanesV(block.scales, block.qs, nullptr, x[b]), acc);
  }
  alignas(16) float m[4];  // [4]
  _mm_store_ps(m, acc_m);
  const float mins = (m[0] + m[2]) + (m[1] + m[3]);
  return HSum8V(acc) + mins;
}

float DotQ5_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  float summs = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ5_K block = LoadBlock<BlockQ5_K>(w, b);
    const float d = x[b].d * F16ToF32(block.d);
    const float dmin = -x[b].d * F16ToF32(block.dmin);
    int32_t prod[4];  // [4] Σ min·bsum pairs
    MinProducts(block.scales, x[b], prod);
    const int32_t min_sum = (prod[0] + prod[1]) + (prod[2] + prod[3]);
    summs = std::fma(dmin, static_cast<float>(min_sum), summs);
    acc = FmaLanesV(d, Q45LanesV(block.scales, block.qs, block.qh, x[b]), acc);
  }
  return HSum8V(acc) + summs;
}

float DotIq4XsQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIq4Xs block = LoadBlock<BlockIq4Xs>(w, b);
    acc = FmaLanesV(F16ToF32(block.d) * x[b].d, Iq4XsLanesV(block, x[b]), acc);
  }
  return HSum8V(acc);
}

float DotIq4XsQ8_KPanel(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIq4Xs block = LoadBlock<BlockIq4Xs>(w, b);
    alignas(32) int32_t lanes[8];  // [8] the vec_dot's lanes; their sum is the panel's S (exact)
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), Iq4XsLanesV(block, x[b]));
    int32_t s = 0;
    for (int m = 0; m < 8; ++m) s += lanes[m];
    acc = std::fma(static_cast<float>(s), F16ToF32(block.d) * x[b].d, acc);
  }
  return acc;
}
