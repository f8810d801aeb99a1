// The AVX2 kernels of kv/formats/codec_kernels.h: RowKernelsAvx2 over a format's 8-lane block
// decoder, bit for bit the scalar twin's operations:
//   Dot  = the canonical dot (ops/dot.h): its 16 lanes as two ymm (lanes 0-7 and 8-15), one fma
//          per element in ascending order per lane, ReduceLanesRef's tree (ReduceAdd16Avx2);
//   Axpy : acc_i = fma(value_i, w, acc_i), rows in ascending order for each weight row.
// Rows the decoder does not take (length not a multiple of kUnit, Supports() false) go to Twin,
// which computes the same bits. No include guard and no includes: codec_kernels_simd.inl.h
// includes it, after ops/dot_simd.inl.h, in the passes with AVX2 (the AVX-512 pass defines
// KVAUDIT_ISA_AVX2 too, but its KVAUDIT_ROW_KERNELS picks RowKernels; only the AVX2 pass's
// formats instantiate this template).
//
// AVX2 decoder concept (the AVX-512 one on 8-lane registers):
//   static constexpr int kUnit;   // elements per Decode call, a multiple of 16
//   static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m256* v);
//       // v[kUnit / 8] = dequantize(row)[u·kUnit, (u+1)·kUnit), exactly
//   static bool Supports(int64_t n, const CodecParams& p);   // optional
template <class Dec, class Twin>
struct RowKernelsAvx2 {
  static_assert(Dec::kUnit % 16 == 0, "a unit must hold whole 16-lane groups");
  static constexpr int kVecs = Dec::kUnit / 8;  // ymm per decoded unit
  // Register tiles within the 16 ymm: DotTile keeps 2·rows·queries accumulators plus one decoded
  // unit per row (2 ymm units: 2 rows × 2 queries; 4 ymm units: 1 row × 4 queries); AxpyTile
  // keeps 4 ymm (32 elements) of up to 2 accumulator rows plus the 4 decoded ymm.
  static constexpr int kTileRows = kVecs == 2 ? 2 : 1;
  static constexpr int kTileQ = kVecs == 2 ? 2 : 4;
  static constexpr int kAxpyUnits = kVecs >= 4 ? 1 : 4 / kVecs;
  static constexpr int kMaxW = 2;

  static bool Fast(int64_t n, const CodecParams& p) {
    if constexpr (requires { Dec::Supports(n, p); }) {
      if (!Dec::Supports(n, p)) return false;
    }
    return n % Dec::kUnit == 0;
  }

  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    if (!Fast(n, p)) return Twin::Dot(src, q, n, p);
    float out;
    DotTile<1, 1>(src, 0, q, 0, n, p, &out, 1);
    return out;
  }

  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p) {
    AxpyRows(src, 0, 1, &w, 0, 1, acc, 0, n, p);
  }

  // out[j·out_stride + r] = Dot(row r, q_j), in tiles of kTileRows rows × kTileQ queries.
  static void DotRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                      int64_t n, float* out, int64_t out_stride, const CodecParams& p) {
    if (!Fast(n, p)) return Twin::DotRows(rows, row_bytes, n_rows, q, q_stride, n_q, n, out, out_stride, p);
    for (int j0 = 0; j0 < n_q; j0 += kTileQ) {
      const float* qj = q + j0 * q_stride;
      float* oj = out + j0 * out_stride;
      const int nq = std::min(kTileQ, n_q - j0);
      if (nq == 1) {
        DotRowsJ<1>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p);
      } else if (nq == 2) {
        DotRowsJ<2>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p);
      } else if constexpr (kTileQ == 4) {
        if (nq == 3)
          DotRowsJ<3>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p);
        else
          DotRowsJ<4>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p);
      }
    }
  }

  // acc_j += Σ_r w_j[r]·row_r, r ascending; 32 elements × up to 2 weight rows in registers.
  static void AxpyRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                       float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    if (!Fast(n, p)) return Twin::AxpyRows(rows, row_bytes, n_rows, w, w_stride, n_w, acc, acc_stride, n, p);
    const int64_t n_units = n / Dec::kUnit;
    for (int j0 = 0; j0 < n_w; j0 += kMaxW) {
      const bool two = n_w - j0 >= 2;
      const float* wj = w + j0 * w_stride;
      float* aj = acc + j0 * acc_stride;
      int64_t u = 0;
      for (; u + kAxpyUnits <= n_units; u += kAxpyUnits) {
        if (two)
          AxpyTile<2, kAxpyUnits>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, u, p);
        else
          AxpyTile<1, kAxpyUnits>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, u, p);
      }
      for (; u < n_units; ++u) {
        if (two)
          AxpyTile<2, 1>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, u, p);
        else
          AxpyTile<1, 1>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, u, p);
      }
    }
  }

 private:
  // out[j·out_stride + r] for R rows × J queries: each row's unit decoded once for the J queries.
  template <int R, int J>
  static void DotTile(const uint8_t* row, uint64_t row_bytes, const float* q, int64_t q_stride, int64_t n,
                      const CodecParams& p, float* out, int64_t out_stride) {
    __m256 lo[R][J], hi[R][J];  // lanes 0-7 and 8-15 of each canonical dot
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < J; ++j) lo[r][j] = hi[r][j] = _mm256_setzero_ps();
    }
    for (int64_t u = 0, i = 0; i < n; ++u, i += Dec::kUnit) {
      __m256 v[R][kVecs];  // [R, kUnit] decoded values
      for (int r = 0; r < R; ++r) Dec::Decode(row + r * row_bytes, u, p, v[r]);
      for (int j = 0; j < J; ++j) {
        for (int k = 0; k < kVecs; k += 2) {  // elements i+8k.. go to lanes 0-7, i+8k+8.. to 8-15
          const __m256 q0 = _mm256_loadu_ps(q + j * q_stride + i + 8 * k);
          const __m256 q1 = _mm256_loadu_ps(q + j * q_stride + i + 8 * k + 8);
          for (int r = 0; r < R; ++r) {
            lo[r][j] = _mm256_fmadd_ps(v[r][k], q0, lo[r][j]);
            hi[r][j] = _mm256_fmadd_ps(v[r][k + 1], q1, hi[r][j]);
          }
        }
      }
    }
    for (int j = 0; j < J; ++j) {
      for (int r = 0; r < R; ++r) out[j * out_stride + r] = ReduceAdd16Avx2(lo[r][j], hi[r][j]);
    }
  }

  template <int J>
  static void DotRowsJ(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int64_t n,
                       float* out, int64_t out_stride, const CodecParams& p) {
    int r = 0;
    for (; r + kTileRows <= n_rows; r += kTileRows) {
      PrefetchBytes(rows, (r + PrefetchRowsAhead(row_bytes)) * static_cast<int64_t>(row_bytes), kTileRows * row_bytes);
      DotTile<kTileRows, J>(rows + r * row_bytes, row_bytes, q, q_stride, n, p, out + r, out_stride);
    }
    for (; r < n_rows; ++r) DotTile<1, J>(rows + r * row_bytes, row_bytes, q, q_stride, n, p, out + r, out_stride);
  }

  // Units [u0, u0 + U) of J accumulator rows, over all n_rows rows.
  template <int J, int U>
  static void AxpyTile(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride,
                       float* acc, int64_t acc_stride, int64_t u0, const CodecParams& p) {
    constexpr int NV = U * kVecs;
    const int64_t i0 = u0 * Dec::kUnit;
    __m256 a[J][NV];  // [J, U·kUnit] accumulators
    for (int j = 0; j < J; ++j) {
      for (int x = 0; x < NV; ++x) a[j][x] = _mm256_loadu_ps(acc + j * acc_stride + i0 + 8 * x);
    }
    for (int r = 0; r < n_rows; ++r) {
      if (u0 == 0) PrefetchBytes(rows, (r + PrefetchRowsAhead(row_bytes)) * static_cast<int64_t>(row_bytes), row_bytes);
      __m256 v[NV];
      for (int uu = 0; uu < U; ++uu) Dec::Decode(rows + r * row_bytes, u0 + uu, p, v + uu * kVecs);
      for (int j = 0; j < J; ++j) {
        const __m256 wv = _mm256_set1_ps(w[j * w_stride + r]);
        for (int x = 0; x < NV; ++x) a[j][x] = _mm256_fmadd_ps(v[x], wv, a[j][x]);
      }
    }
    for (int j = 0; j < J; ++j) {
      for (int x = 0; x < NV; ++x) _mm256_storeu_ps(acc + j * acc_stride + i0 + 8 * x, a[j][x]);
    }
  }
};
