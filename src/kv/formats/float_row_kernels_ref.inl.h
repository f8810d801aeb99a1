// The float row codecs' in-place scalar twins (kv/formats/float_row_kernels.h), as an include with
// no guard and no includes: once in namespace kvaudit (float_row_kernels.h), again inside the AVX2
// pass (float_row_kernels_simd.inl.h, after codec_kernels_simd.inl.h's RowKernelsRefRows), where
// std::fma is the FMA instruction. Same source, same bits.
// The float formats' scalar twins read each stored value in place: RowKernelsRef's operations on
// the same values (so the same bits) without a row buffer, hence no bound on n.
template <FloatLoad Load>
struct FloatRowKernelsRef : RowKernelsRefRows<FloatRowKernelsRef<Load>> {
  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
    return DotCanonicalScalar(
        q, [src](int64_t i) { return Load(src, i); }, n);
  }
  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
    for (int64_t i = 0; i < n; ++i) acc[i] = std::fma(Load(src, i), w, acc[i]);
  }
};
