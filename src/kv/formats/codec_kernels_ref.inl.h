// The row codecs' scalar twins (kv/formats/codec_kernels.h), as an include with no guard and no
// includes of its own: codec_kernels.h includes it once in namespace kvaudit (the *CodecRef
// references, the portable path), and codec_kernels_simd.inl.h again inside the AVX2 and AVX-512
// passes, so there the twins' std::fma is one FMA instruction (baseline x86-64 code calls libm's
// fma(): the AVX2 path's attention was ~25x slower with it). The same source, the same operations,
// so the same bits in every copy.
// The multi-row / multi-query forms of a scalar twin: its one-row Dot / Axpy, rows in ascending
// order for each weight row (the sequence the batched kernels must reproduce bit for bit). The
// float formats' twins use these as they are (kv/formats/float_row_kernels.h).
template <class One>
struct RowKernelsRefRows {
  static void DotRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                      int64_t n, float* out, int64_t out_stride, const CodecParams& p) {
    for (int j = 0; j < n_q; ++j) {
      for (int r = 0; r < n_rows; ++r) out[j * out_stride + r] = One::Dot(rows + r * row_bytes, q + j * q_stride, n, p);
    }
  }
  static void AxpyRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                       float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    for (int r = 0; r < n_rows; ++r) {
      for (int j = 0; j < n_w; ++j) One::Axpy(rows + r * row_bytes, w[j * w_stride + r], acc + j * acc_stride, n, p);
    }
  }
};

// The scalar twins: dequantize (into a stack row: no allocation per call), then the canonical
// order written out (ops/dot.h).
template <DequantizeFn Dequantize>
struct RowKernelsRef {
  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n]
    Dequantize(src, y, n, p);
    return DotCanonicalScalar(q, static_cast<const float*>(y), n);
  }
  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n]
    Dequantize(src, y, n, p);
    for (int64_t i = 0; i < n; ++i) acc[i] = std::fma(y[i], w, acc[i]);
  }
  // The multi-row forms dequantize each row once for all queries / weight rows; every output must
  // see Dot's / Axpy's operations (rows in ascending order), the sequence RowKernelsRefRows spells
  // out (tests/unit/kv_codec_kernels_test.cc compares them with Dot / Axpy).
  static void DotRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                      int64_t n, float* out, int64_t out_stride, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n] row r
    const float* yr = y;
    for (int r = 0; r < n_rows; ++r) {
      Dequantize(rows + r * row_bytes, y, n, p);
      for (int j = 0; j < n_q; ++j) out[j * out_stride + r] = DotCanonicalScalar(q + j * q_stride, yr, n);
    }
  }
  static void AxpyRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                       float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n] row r
    for (int r = 0; r < n_rows; ++r) {
      Dequantize(rows + r * row_bytes, y, n, p);
      for (int j = 0; j < n_w; ++j) {
        float* a = acc + j * acc_stride;
        const float wt = w[j * w_stride + r];
        for (int64_t i = 0; i < n; ++i) a[i] = std::fma(y[i], wt, a[i]);
      }
    }
  }
};
