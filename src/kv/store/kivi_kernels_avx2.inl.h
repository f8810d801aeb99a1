// The KIVI kernels on the AVX2 path (kv/store/kivi_kernels.h's arithmetic on 8-lane registers, bit
// for bit the references). No include guard and no includes: kv/store/kivi_kernels.cc includes it
// in its AVX2 pass, after ops/dot_simd.inl.h.
//
// A slab here is 8 consecutive codes of a group (kBits bytes: byte aligned when G % 8 == 0):
// shifting the little-endian word right by kBits·l puts the code of element l in lane l's low
// bits, so slabs come out in natural order (no lane permutation, unlike the 16-lane AVX-512 slabs).
namespace {

constexpr int kMaxBatch = 4;  // queries / weight rows per register tile

template <int kBits>
inline __m256 Slab8(const uint8_t* p) {
  uint32_t u = 0;
  std::memcpy(&u, p, kBits);  // 8 codes of kBits bits
  const __m256i shifts =
      kBits == 2 ? _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14) : _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(u)), shifts),
                                         _mm256_set1_epi32((1 << kBits) - 1));
  return _mm256_cvtepi32_ps(codes);
}

inline float HalfToF32(uint16_t h) { return _cvtsh_ss(h); }  // exact, as the AVX-512 pass converts

// ---- keys ----

// Per-query constants of one group for nb queries: w [nb, hd] = q_i ⊙ s, qm [nb] = DotF32(q_i, m)
// (this pass's scalar copy of the canonical dot).
void KeyPrep(const uint16_t* sm, int hd, const float* q, int64_t q_stride, int nb, float* w, float* qm) {
  for (int i = 0; i < nb; ++i) {
    const float* qi = q + i * q_stride;
    for (int c = 0; c < hd; ++c) w[static_cast<int64_t>(i) * hd + c] = qi[c] * HalfToF32(sm[2 * c]);
    qm[i] = DotCanonicalScalar(
        qi, [sm](int64_t c) { return HalfToF32(sm[2 * c + 1]); }, hd);
  }
}

// Slabs s0 .. s0+NS−1 of the group for NQ queries: acc [NQ][NS] ymm, one fma chain per (query,
// token) lane over the channels in ascending order; each channel's slabs decoded once.
template <int kBits, int NQ, int NS>
void KeySlabs(const uint8_t* codes, int64_t cb, int hd, const float* w, const float* qm, int s0, int lo, int hi,
              float* out, int64_t out_stride) {
  __m256 acc[NQ][NS];
  for (auto& row : acc) {
    for (__m256& a : row) a = _mm256_setzero_ps();
  }
  const uint8_t* p = codes + s0 * kBits;
  for (int c = 0; c < hd; ++c, p += cb) {
    __m256 x[NS];  // [NS] 8 codes each
    for (int k = 0; k < NS; ++k) x[k] = Slab8<kBits>(p + k * kBits);
    for (int i = 0; i < NQ; ++i) {
      const __m256 wc = _mm256_set1_ps(w[static_cast<int64_t>(i) * hd + c]);
      for (int k = 0; k < NS; ++k) acc[i][k] = _mm256_fmadd_ps(wc, x[k], acc[i][k]);
    }
  }
  for (int i = 0; i < NQ; ++i) {
    for (int k = 0; k < NS; ++k) {
      alignas(32) float tmp[8];  // [8] scores of tokens t_begin ..
      _mm256_store_ps(tmp, _mm256_add_ps(acc[i][k], _mm256_set1_ps(qm[i])));
      const int t_begin = (s0 + k) * 8, a = std::max(lo, t_begin), b = std::min(hi, t_begin + 8);
      for (int t = a; t < b; ++t) out[i * out_stride + t - lo] = tmp[t - t_begin];
    }
  }
}

template <int kBits, int NS>
void KeySlabsFor(int nq, const uint8_t* codes, int64_t cb, int hd, const float* w, const float* qm, int s0, int lo,
                 int hi, float* out, int64_t out_stride) {
  switch (nq) {
    case 1: return KeySlabs<kBits, 1, NS>(codes, cb, hd, w, qm, s0, lo, hi, out, out_stride);
    case 2: return KeySlabs<kBits, 2, NS>(codes, cb, hd, w, qm, s0, lo, hi, out, out_stride);
    case 3: return KeySlabs<kBits, 3, NS>(codes, cb, hd, w, qm, s0, lo, hi, out, out_stride);
    default: return KeySlabs<kBits, 4, NS>(codes, cb, hd, w, qm, s0, lo, hi, out, out_stride);
  }
}

template <int kBits>
void KeyGroupDotAvx2(const uint8_t* codes, const uint16_t* sm, int hd, int G, const float* q, int64_t q_stride, int n_q,
                     int lo, int hi, float* out, int64_t out_stride) {
  alignas(32) float w[kMaxBatch * kKiviMaxHeadDim];  // [nb, hd]
  float qm[kMaxBatch];                               // [nb]
  const int64_t cb = static_cast<int64_t>(G) * kBits / 8;
  const int s_begin = lo / 8, s_end = (hi + 7) / 8;  // only the slabs holding requested tokens
  for (int i0 = 0; i0 < n_q; i0 += kMaxBatch) {
    const int nb = std::min(kMaxBatch, n_q - i0);
    KeyPrep(sm, hd, q + i0 * q_stride, q_stride, nb, w, qm);
    float* o = out + i0 * out_stride;
    int s = s_begin;
    for (; s + 2 <= s_end; s += 2) KeySlabsFor<kBits, 2>(nb, codes, cb, hd, w, qm, s, lo, hi, o, out_stride);
    if (s < s_end) KeySlabsFor<kBits, 1>(nb, codes, cb, hd, w, qm, s, lo, hi, o, out_stride);
  }
}

// ---- values ----

// Channel slabs k0 .. k0+T−1 (8 channels each) of every row for NW weight rows: acc [NW][T] ymm
// kept in registers over the rows; x̂ = fma(code, s, m) per channel, then one fma per row.
template <int kBits, int NW, int T>
void ValueTile(const uint8_t* codes, int64_t row_bytes, const uint16_t* sm, int ng, int G, int n_rows, int k0,
               const float* w, int64_t w_stride, float* acc, int64_t acc_stride) {
  int grp[T];  // [T] group of each slab (a slab never straddles two: G % 8 == 0)
  for (int k = 0; k < T; ++k) grp[k] = (k0 + k) * 8 / G;
  __m256 a[NW][T];
  for (int i = 0; i < NW; ++i) {
    for (int k = 0; k < T; ++k) a[i][k] = _mm256_loadu_ps(acc + i * acc_stride + (k0 + k) * 8);
  }
  const uint8_t* p = codes + k0 * kBits;
  const uint16_t* smr = sm;
  for (int r = 0; r < n_rows; ++r, p += row_bytes, smr += 2 * ng) {
    __m256 wv[NW];
    for (int i = 0; i < NW; ++i) wv[i] = _mm256_set1_ps(w[i * w_stride + r]);
    __m256 s = _mm256_setzero_ps(), m = _mm256_setzero_ps();
    for (int k = 0; k < T; ++k) {
      if (k == 0 || grp[k] != grp[k - 1]) {
        uint32_t pair;
        std::memcpy(&pair, smr + 2 * grp[k], 4);
        const __m128 sm2 = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(pair)));  // [s, m, 0, 0]
        s = _mm256_broadcastss_ps(sm2);
        m = _mm256_broadcastss_ps(_mm_movehdup_ps(sm2));
      }
      const __m256 x = _mm256_fmadd_ps(Slab8<kBits>(p + k * kBits), s, m);
      for (int i = 0; i < NW; ++i) a[i][k] = _mm256_fmadd_ps(x, wv[i], a[i][k]);
    }
  }
  for (int i = 0; i < NW; ++i) {
    for (int k = 0; k < T; ++k) _mm256_storeu_ps(acc + i * acc_stride + (k0 + k) * 8, a[i][k]);
  }
}

// Slabs per tile: NW·T accumulators + NW weights + the slab in flight stay within the 16 ymm.
constexpr int TileFor(int nw) { return nw == 1 ? 8 : nw == 2 ? 4 : nw == 3 ? 3 : 2; }

template <int kBits, int NW>
void ValueRowsNw(const uint8_t* codes, int64_t row_bytes, const uint16_t* sm, int ng, int G, int n_rows, int n_slabs,
                 const float* w, int64_t w_stride, float* acc, int64_t acc_stride) {
  int k0 = 0;
  for (; k0 + TileFor(NW) <= n_slabs; k0 += TileFor(NW)) {
    ValueTile<kBits, NW, TileFor(NW)>(codes, row_bytes, sm, ng, G, n_rows, k0, w, w_stride, acc, acc_stride);
  }
  for (; k0 < n_slabs; ++k0)
    ValueTile<kBits, NW, 1>(codes, row_bytes, sm, ng, G, n_rows, k0, w, w_stride, acc, acc_stride);
}

template <int kBits>
void ValueRowsAxpyAvx2(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, const float* w,
                       int64_t w_stride, int n_w, float* acc, int64_t acc_stride) {
  const int ng = hd / G, n_slabs = hd / 8;
  const int64_t row_bytes = static_cast<int64_t>(hd) * kBits / 8;
  for (int i0 = 0; i0 < n_w; i0 += kMaxBatch) {
    const float* wi = w + i0 * w_stride;
    float* ai = acc + i0 * acc_stride;
    switch (std::min(kMaxBatch, n_w - i0)) {
      case 1: ValueRowsNw<kBits, 1>(codes, row_bytes, sm, ng, G, n_rows, n_slabs, wi, w_stride, ai, acc_stride); break;
      case 2: ValueRowsNw<kBits, 2>(codes, row_bytes, sm, ng, G, n_rows, n_slabs, wi, w_stride, ai, acc_stride); break;
      case 3: ValueRowsNw<kBits, 3>(codes, row_bytes, sm, ng, G, n_rows, n_slabs, wi, w_stride, ai, acc_stride); break;
      default: ValueRowsNw<kBits, 4>(codes, row_bytes, sm, ng, G, n_rows, n_slabs, wi, w_stride, ai, acc_stride); break;
    }
  }
}

}  // namespace

void KiviKeyGroupDot(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                     int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride) {
  KV_CHECK(hd > 0 && hd <= kKiviMaxHeadDim && 0 <= lo && lo <= hi && hi <= G && (bits == 2 || bits == 4));
  if (G % 8 != 0) return KiviKeyGroupDotRef(codes, sm, hd, G, bits, q, q_stride, n_q, lo, hi, out, out_stride);
  if (bits == 2) return KeyGroupDotAvx2<2>(codes, sm, hd, G, q, q_stride, n_q, lo, hi, out, out_stride);
  KeyGroupDotAvx2<4>(codes, sm, hd, G, q, q_stride, n_q, lo, hi, out, out_stride);
}

void KiviValueRowsAxpy(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                       int64_t w_stride, int n_w, float* acc, int64_t acc_stride) {
  KV_CHECK(hd > 0 && G > 0 && hd % G == 0 && (bits == 2 || bits == 4));
  if (G % 8 != 0) return KiviValueRowsAxpyRef(codes, sm, n_rows, hd, G, bits, w, w_stride, n_w, acc, acc_stride);
  if (bits == 2) return ValueRowsAxpyAvx2<2>(codes, sm, n_rows, hd, G, w, w_stride, n_w, acc, acc_stride);
  ValueRowsAxpyAvx2<4>(codes, sm, n_rows, hd, G, w, w_stride, n_w, acc, acc_stride);
}
