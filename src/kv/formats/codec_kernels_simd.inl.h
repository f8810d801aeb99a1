// The AVX-512 kernels of kv/formats/codec_kernels.h (RowKernels over a format's block decoder) and
// KVAUDIT_ROW_KERNELS, the kernel slots a format's pass uses: RowKernels in the AVX-512 pass,
// RowKernelsAvx2 over the format's 8-lane decoder (codec_kernels_avx2.inl.h) in the AVX2 pass, the
// scalar twins (RowKernelsRef, defined once in codec_kernels.h) in the portable pass. No include guard and no includes:
// a format's kernel section (base/isa_passes.h) includes it inside its pass namespace, after "ops/dot_simd.inl.h", and
// defines its decoder after it. The template is the same tokens in every translation unit (one
// definition); its instantiations are over each file's own decoder, in an unnamed namespace, so
// they stay local to that file.
#undef KVAUDIT_ROW_KERNELS

// The vector kernels' software prefetch of packed rows ~4 KiB ahead of the one being read, past
// the end of the call too (the next chunk of the same store follows; a prefetch never faults, and
// the address is formed as an integer so no out-of-range pointer is made). Decode attention
// streams K and V of a head alternately, chunk by chunk (attention_bench: −20% f16 time with it).
inline int64_t PrefetchRowsAhead(uint64_t row_bytes) {  // 0 for a single row (Axpy passes row_bytes 0)
  return row_bytes == 0 ? 0 : std::max<int64_t>(2, 4096 / static_cast<int64_t>(row_bytes));
}
inline void PrefetchBytes(const uint8_t* base, int64_t offset, uint64_t bytes) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(offset);
  for (uint64_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(at + o), _MM_HINT_T0);
}

#if defined(KVAUDIT_ISA_AVX2)  // this pass's own copy of the scalar twins (hardware FMA)
#include "kv/formats/codec_kernels_ref.inl.h"
#include "kv/formats/codec_kernels_avx2.inl.h"
#endif

#if defined(KVAUDIT_ISA_AVX512)
template <class Dec, DequantizeFn Dequantize>
struct RowKernels {
  static constexpr int kVecs = Dec::kUnit / 16;  // zmm per decoded unit
  static constexpr int kAxpyUnits = 4 / kVecs;   // units per axpy register tile (4 zmm per weight row)
  static constexpr int kMaxQ = 4;                // query / weight rows per register tile

  static bool Fast(int64_t n, const CodecParams& p) {
    if constexpr (requires { Dec::Supports(n, p); }) {
      if (!Dec::Supports(n, p)) return false;
    }
    return n % Dec::kUnit == 0;
  }

  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    if (!Fast(n, p)) return DotFallback(src, q, n, p);
    __m512 acc;
    DotTile<1, 1>(src, 0, q, 0, n, p, &acc);
    return ReduceAdd16(acc);
  }

  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p) {
    AxpyRows(src, 0, 1, &w, 0, 1, acc, 0, n, p);
  }

  // out[j·out_stride + r] = Dot(row r, q_j): for up to 4 queries at a time, blocks of 16 / J rows
  // whose J·(16 / J) accumulators are reduced by one 16-at-once tree (bitwise ReduceAdd16 per lane).
  static void DotRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                      int64_t n, float* out, int64_t out_stride, const CodecParams& p) {
    if (!Fast(n, p)) {
      for (int j = 0; j < n_q; ++j) {
        for (int r = 0; r < n_rows; ++r)
          out[j * out_stride + r] = DotFallback(rows + r * row_bytes, q + j * q_stride, n, p);
      }
      return;
    }
    for (int j0 = 0; j0 < n_q; j0 += kMaxQ) {
      const float* qj = q + j0 * q_stride;
      float* oj = out + j0 * out_stride;
      switch (std::min(kMaxQ, n_q - j0)) {
        case 1: DotRowsJ<1>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p); break;
        case 2: DotRowsJ<2>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p); break;
        case 3: DotRowsJ<3>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p); break;
        default: DotRowsJ<4>(rows, row_bytes, n_rows, qj, q_stride, n, oj, out_stride, p); break;
      }
    }
  }

  // acc_j += Σ_r w_j[r]·row_r, r ascending, per element one fma per row (Axpy's sequence); the
  // accumulators of up to 4 weight rows × 4 zmm stay in registers across all rows.
  static void AxpyRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                       float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    if (!Fast(n, p)) {
      AxpyFallback(rows, row_bytes, n_rows, w, w_stride, n_w, acc, acc_stride, n, p);
      return;
    }
    const int64_t n_units = n / Dec::kUnit;
    for (int j0 = 0; j0 < n_w; j0 += kMaxQ) {
      const int nj = std::min(kMaxQ, n_w - j0);
      const float* wj = w + j0 * w_stride;
      float* aj = acc + j0 * acc_stride;
      int64_t u = 0;
      for (; u + kAxpyUnits <= n_units; u += kAxpyUnits) {
        AxpyTileFor<kAxpyUnits>(nj, rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, u, p);
      }
      for (; u < n_units; ++u) AxpyTileFor<1>(nj, rows, row_bytes, n_rows, wj, w_stride, aj, acc_stride, u, p);
    }
  }

 private:
  // acc[r·J + j] = the canonical lane accumulators of row r · query j (before the tree).
  template <int R, int J>
  static void DotTile(const uint8_t* row, uint64_t row_bytes, const float* q, int64_t q_stride, int64_t n,
                      const CodecParams& p, __m512* acc) {
    for (int k = 0; k < R * J; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t u = 0, i = 0; i < n; ++u, i += Dec::kUnit) {
      __m512 v[R][kVecs];  // decoded once for all J queries
      for (int r = 0; r < R; ++r) Dec::Decode(row + r * row_bytes, u, p, v[r]);
      for (int j = 0; j < J; ++j) {
        for (int k = 0; k < kVecs; ++k) {  // ascending element order within each lane
          const __m512 qv = _mm512_loadu_ps(q + j * q_stride + i + 16 * k);
          for (int r = 0; r < R; ++r) acc[r * J + j] = _mm512_fmadd_ps(v[r][k], qv, acc[r * J + j]);
        }
      }
    }
  }

  // Rows [0, n_rows) × J queries, in blocks of RB = 16 / J rows: slot j·RB + r of the 16 holds
  // row r · query j, so after the tree the RB sums of query j are lanes [j·RB, j·RB + RB) and go to
  // out with one compress + masked store (no scatter).
  template <int J>
  static void DotRowsJ(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int64_t n,
                       float* out, int64_t out_stride, const CodecParams& p) {
    constexpr int RB = 16 / J;
    for (int r0 = 0; r0 < n_rows; r0 += RB) {
      const int nr = std::min(RB, n_rows - r0);
      __m512 slots[16];
      for (__m512& x : slots) x = _mm512_setzero_ps();
      const uint8_t* block = rows + r0 * row_bytes;
      int r = 0;
      for (; r + 2 <= nr; r += 2) {
        PrefetchBytes(block, (r + PrefetchRowsAhead(row_bytes)) * static_cast<int64_t>(row_bytes), 2 * row_bytes);
        __m512 acc[2 * J];
        DotTile<2, J>(block + r * row_bytes, row_bytes, q, q_stride, n, p, acc);
        for (int j = 0; j < J; ++j) {
          slots[j * RB + r] = acc[j];
          slots[j * RB + r + 1] = acc[J + j];
        }
      }
      if (r < nr) {
        __m512 acc[J];
        DotTile<1, J>(block + r * row_bytes, row_bytes, q, q_stride, n, p, acc);
        for (int j = 0; j < J; ++j) slots[j * RB + r] = acc[j];
      }
      const __m512 sums = ReduceAdd16x16(slots);
      const __mmask16 first = static_cast<__mmask16>((1u << nr) - 1);
      for (int j = 0; j < J; ++j) {
        const __m512 mine = j == 0 ? sums : _mm512_maskz_compress_ps(static_cast<__mmask16>(first << (j * RB)), sums);
        _mm512_mask_storeu_ps(out + j * out_stride + r0, first, mine);
      }
    }
  }

  // Elements [u0·kUnit, (u0+U)·kUnit) of J accumulator rows, over all n_rows rows.
  template <int J, int U>
  static void AxpyTile(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride,
                       float* acc, int64_t acc_stride, int64_t u0, const CodecParams& p) {
    constexpr int NV = U * kVecs;
    const int64_t i0 = u0 * Dec::kUnit;
    __m512 a[J][NV];  // [J, U·kUnit] accumulators
    for (int j = 0; j < J; ++j) {
      for (int x = 0; x < NV; ++x) a[j][x] = _mm512_loadu_ps(acc + j * acc_stride + i0 + 16 * x);
    }
    for (int r = 0; r < n_rows; ++r) {
      if (u0 == 0) PrefetchBytes(rows, (r + PrefetchRowsAhead(row_bytes)) * static_cast<int64_t>(row_bytes), row_bytes);
      __m512 v[NV];
      for (int uu = 0; uu < U; ++uu) Dec::Decode(rows + r * row_bytes, u0 + uu, p, v + uu * kVecs);
      for (int j = 0; j < J; ++j) {
        const __m512 wv = _mm512_set1_ps(w[j * w_stride + r]);
        for (int x = 0; x < NV; ++x) a[j][x] = _mm512_fmadd_ps(v[x], wv, a[j][x]);
      }
    }
    for (int j = 0; j < J; ++j) {
      for (int x = 0; x < NV; ++x) _mm512_storeu_ps(acc + j * acc_stride + i0 + 16 * x, a[j][x]);
    }
  }

  template <int U>
  static void AxpyTileFor(int nj, const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride,
                          float* acc, int64_t acc_stride, int64_t u0, const CodecParams& p) {
    switch (nj) {
      case 1: AxpyTile<1, U>(rows, row_bytes, n_rows, w, w_stride, acc, acc_stride, u0, p); break;
      case 2: AxpyTile<2, U>(rows, row_bytes, n_rows, w, w_stride, acc, acc_stride, u0, p); break;
      case 3: AxpyTile<3, U>(rows, row_bytes, n_rows, w, w_stride, acc, acc_stride, u0, p); break;
      default: AxpyTile<4, U>(rows, row_bytes, n_rows, w, w_stride, acc, acc_stride, u0, p); break;
    }
  }

  static float DotFallback(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    alignas(64) float y[kCodecMaxRowElems];  // [n]
    Dequantize(src, y, n, p);
    return DotF32(q, y, n);
  }

  // Rows the tiles do not take: the scalar twin's multi-row Axpy (the same fma per element).
  static void AxpyFallback(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride,
                           int n_w, float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    RowKernelsRef<Dequantize>::AxpyRows(rows, row_bytes, n_rows, w, w_stride, n_w, acc, acc_stride, n, p);
  }
};

#define KVAUDIT_ROW_KERNELS(Dec, Dequantize) RowKernels<Dec, Dequantize>
#elif defined(KVAUDIT_ISA_AVX2)
#define KVAUDIT_ROW_KERNELS(Dec, Dequantize) RowKernelsAvx2<Dec, RowKernelsRef<Dequantize>>
#else
// The decoder argument is dropped unexpanded: the portable pass defines no decoder.
#define KVAUDIT_ROW_KERNELS(Dec, Dequantize) RowKernelsRef<Dequantize>
#endif
