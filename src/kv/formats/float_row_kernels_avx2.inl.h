// The float row codecs' kernels on the AVX2 path (f32, f16, bf16 caches: the eval's baseline and
// the most deployed cache): kv/formats/codec_kernels.h's contract on 8-lane registers, bit for
// bit FloatRowKernelsRef's operations:
//   Dot  = the canonical dot (ops/dot.h): 16 lanes as two ymm (lanes 0-7, 8-15), one fma per
//          element in ascending order per lane, ReduceLanesRef's tree (ReduceAdd16Avx2);
//   Axpy : acc_i = fma(row_i, w, acc_i), rows in ascending order for each weight row.
// Rows whose length is not a multiple of 16 (Dot) or 8 (Axpy) take the twin (same bits).
// No include guard and no includes: float_row_kernels_simd.inl.h includes it in the AVX2 pass,
// after float_row_kernels_ref.inl.h and ops/dot_simd.inl.h.
using FloatLoad8 = __m256 (*)(const uint8_t* src, int64_t i);

template <FloatLoad8 Load8, FloatLoad Load>
struct FloatRowKernelsAvx2 {
  using Twin = FloatRowKernelsRef<Load>;
  static constexpr int kMaxQ = 2;  // queries (DotRows) or weight rows (AxpyRows) per register tile

  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    if (n % 16 != 0) return Twin::Dot(src, q, n, p);
    float out;
    DotTile<1, 1>(src, 0, q, 0, n, &out, 1);
    return out;
  }

  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p) {
    AxpyRows(src, 0, 1, &w, 0, 1, acc, 0, n, p);
  }

  // out[j·out_stride + r] = Dot(row r, q_j), rows two at a time, queries two at a time.
  static void DotRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                      int64_t n, float* out, int64_t out_stride, const CodecParams& p) {
    if (n % 16 != 0) return Twin::DotRows(rows, row_bytes, n_rows, q, q_stride, n_q, n, out, out_stride, p);
    for (int j0 = 0; j0 < n_q; j0 += kMaxQ) {
      const float* qj = q + j0 * q_stride;
      float* oj = out + j0 * out_stride;
      const bool two_q = n_q - j0 >= 2;
      int r = 0;
      for (; r + 2 <= n_rows; r += 2) {
        if (two_q) DotTile<2, 2>(rows + r * row_bytes, row_bytes, qj, q_stride, n, oj + r, out_stride);
        else DotTile<2, 1>(rows + r * row_bytes, row_bytes, qj, q_stride, n, oj + r, out_stride);
      }
      if (r < n_rows) {
        if (two_q) DotTile<1, 2>(rows + r * row_bytes, row_bytes, qj, q_stride, n, oj + r, out_stride);
        else DotTile<1, 1>(rows + r * row_bytes, row_bytes, qj, q_stride, n, oj + r, out_stride);
      }
    }
  }

  // acc_j += Σ_r w_j[r]·row_r, r ascending; 32 elements × up to 2 weight rows in registers.
  static void AxpyRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                       float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    if (n % 8 != 0) return Twin::AxpyRows(rows, row_bytes, n_rows, w, w_stride, n_w, acc, acc_stride, n, p);
    for (int j0 = 0; j0 < n_w; j0 += kMaxQ) {
      const bool two = n_w - j0 >= 2;
      const float* wj = w + j0 * w_stride;
      float* aj = acc + j0 * acc_stride;
      int64_t i = 0;
      for (; i + 32 <= n; i += 32) {
        if (two) AxpyTile<2, 4>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, i);
        else AxpyTile<1, 4>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, i);
      }
      for (; i < n; i += 8) {
        if (two) AxpyTile<2, 1>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, i);
        else AxpyTile<1, 1>(rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, i);
      }
    }
  }

 private:
  // out[j·out_stride + r] for R rows × J queries: each row's 8-value loads shared by the J queries.
  template <int R, int J>
  static void DotTile(const uint8_t* row, uint64_t row_bytes, const float* q, int64_t q_stride, int64_t n, float* out,
                      int64_t out_stride) {
    __m256 lo[R][J], hi[R][J];  // lanes 0-7 and 8-15 of each canonical dot
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < J; ++j) lo[r][j] = hi[r][j] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n; i += 16) {
      __m256 v0[R], v1[R];
      for (int r = 0; r < R; ++r) {
        v0[r] = Load8(row + r * row_bytes, i);
        v1[r] = Load8(row + r * row_bytes, i + 8);
      }
      for (int j = 0; j < J; ++j) {
        const __m256 q0 = _mm256_loadu_ps(q + j * q_stride + i), q1 = _mm256_loadu_ps(q + j * q_stride + i + 8);
        for (int r = 0; r < R; ++r) {
          lo[r][j] = _mm256_fmadd_ps(q0, v0[r], lo[r][j]);
          hi[r][j] = _mm256_fmadd_ps(q1, v1[r], hi[r][j]);
        }
      }
    }
    for (int j = 0; j < J; ++j) {
      for (int r = 0; r < R; ++r) out[j * out_stride + r] = ReduceAdd16Avx2(lo[r][j], hi[r][j]);
    }
  }

  // Elements [i0, i0 + 8·V) of J accumulator rows, over all n_rows rows.
  template <int J, int V>
  static void AxpyTile(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride,
                       float* acc, int64_t acc_stride, int64_t i0) {
    __m256 a[J][V];  // [J, 8·V] accumulators
    for (int j = 0; j < J; ++j) {
      for (int x = 0; x < V; ++x) a[j][x] = _mm256_loadu_ps(acc + j * acc_stride + i0 + 8 * x);
    }
    for (int r = 0; r < n_rows; ++r) {
      __m256 v[V];
      for (int x = 0; x < V; ++x) v[x] = Load8(rows + r * row_bytes, i0 + 8 * x);
      for (int j = 0; j < J; ++j) {
        const __m256 wv = _mm256_set1_ps(w[j * w_stride + r]);
        for (int x = 0; x < V; ++x) a[j][x] = _mm256_fmadd_ps(v[x], wv, a[j][x]);
      }
    }
    for (int j = 0; j < J; ++j) {
      for (int x = 0; x < V; ++x) _mm256_storeu_ps(acc + j * acc_stride + i0 + 8 * x, a[j][x]);
    }
  }
};
