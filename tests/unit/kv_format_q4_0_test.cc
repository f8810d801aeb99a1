// llama.cpp q4_0 KV-cache format: byte-identical blocks, round-trip error bands, layout,
// fused dot/axpy SIMD against the scalar reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "kv/formats/ggml_block_codecs.h"
#include "unit/kv_block_test_util.h"

namespace kvaudit {
namespace {

using block_test::Golden;

// Expected bytes were computed once, independently of this code, by a short Python script that
// re-implements ggml-quants.c quantize_row_q4_0_ref in float32
// semantics: every + - * / rounded to f32 (struct.pack('f')), (int8_t)/(uint8_t) casts truncate,
// roundf = half away from zero, fp16 via struct.pack('e') (round to nearest even, overflow -> inf).
// Cases: .5 ties, all-zero, all-equal, the fp16 limits ±65504, scales that are fp16 subnormals or
// round to zero, the largest |x| negative vs positive, a random block.
const Golden kGolden[] = {
    {"ties",
     {-8.0f, 0.5f,  -0.5f, 1.5f,  -1.5f, 6.5f, 7.5f, -7.5f, 7.0f, -6.5f, -5.5f, -5.0f, -4.5f, -4.0f, -3.5f, -3.0f,
      -2.5f, -2.0f, -1.5f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f,  1.5f, 2.0f,  2.5f,  3.0f,  3.5f,  4.0f,  4.5f,  5.0f},
     "003c6069787a878f9f91afa2b3b3c4c4d5d5"},
    {"ties_pos",
     {8.0f,  0.5f,  -0.5f, 1.5f,  -1.5f, 6.5f, 7.5f, -7.5f, 7.0f, -6.5f, -5.5f, -5.0f, -4.5f, -4.0f, -3.5f, -3.0f,
      -2.5f, -2.0f, -1.5f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f,  1.5f, 2.0f,  2.5f,  3.0f,  3.5f,  4.0f,  4.5f,  5.0f},
     "00bcb0a8a9979a82817f716f6e5d5d4c4c3b"},
    {"zeros",
     {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
      0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
     "008088888888888888888888888888888888"},
    {"all_equal",
     {0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f},
     "cda800000000000000000000000000000000"},
    {"fp16_limits",
     {65504.0f, -65504.0f, -15000.0f, -14000.0f, -13000.0f, -12000.0f, -11000.0f, -10000.0f,
      -9000.0f, -8000.0f,  -7000.0f,  -6000.0f,  -5000.0f,  -4000.0f,  -3000.0f,  -2000.0f,
      -1000.0f, 0.0f,      1000.0f,   2000.0f,   3000.0f,   4000.0f,   5000.0f,   6000.0f,
      7000.0f,  8000.0f,   9000.0f,   10000.0f,  11000.0f,  12000.0f,  13000.0f,  14000.0f},
     "ffef808f8a8a8a8979797979797979786868"},
    {"tiny_scale",
     {-9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f},
     "15005083b5d8fb0d3f5083b5d8fb0d3f5083"},
    {"tinier_scale",
     {-1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f},
     "04004084c8fc0f4084c8fc0f4084c8fc0f40"},
    {"max_negative",
     {-3.0f,         -1.33755004f,  -1.07621002f,  -0.0316600017f, 0.568910003f, -0.396670014f, -1.96155f,
      -0.368149996f, 0.625590026f,  -0.94066f,     -1.93548f,      0.227379993f, 0.225280002f,  -0.53008002f,
      0.656340003f,  -0.508220017f, -0.377759993f, 0.872619987f,   0.172250003f, 0.0801199973f, 0.84266001f,
      -0.591329992f, 0.349350005f,  1.37560999f,   -0.228880003f,  -0.12032f,    -0.961049974f, 1.75873005f,
      -0.754390001f, 0.0338199995f, 1.57495999f,   1.22500002f},
     "003670a48588aa6793c77a8553d96987cab7"},
    {"max_positive",
     {3.0f,          -0.440369993f, -0.667689979f, 0.707710028f,  0.62221998f,  -1.06813002f,  1.39842999f,
      -0.603600025f, 0.6153f,       -1.34666002f,  -0.636160016f, 0.627089977f, 1.49830997f,   -0.394080013f,
      -0.372119993f, 0.248779997f,  -1.36810994f,  0.808130026f,  -1.00309002f, 1.79358995f,   1.01155996f,
      0.908789992f,  -0.144480005f, -0.32822001f,  -0.793340027f, -1.26011002f, -0.363599986f, -1.56851995f,
      -0.803049982f, -2.59678006f,  0.768779993f,  -0.472449988f},
     "00b6c069ba36566b849aa6bc9ac6a4f96997"},
    {"random",
     {-1.65465999f,   -0.447030008f, 0.00696999999f, 0.660589993f, 0.154420003f,  -1.11611998f,  -0.191080004f,
      0.09595f,       0.162829995f,  -1.54867005f,   0.893270016f, -0.730610013f, 0.827409983f,  -0.871850014f,
      -0.0783500001f, 0.976409972f,  -0.93554002f,   0.279300004f, -0.218950003f, -0.202150002f, 0.38409999f,
      -0.471520007f,  -0.630259991f, 0.254579991f,   0.437449992f, 0.233429998f,  -1.98791003f,  0.0862800032f,
      -0.160779998f,  -0.41881001f,  -0.0527600013f, 0.235699996f},
     "f4334196787ba9645798a9920c857b64889c"},
};

TEST(KvFormatQ4_0, BlocksMatchLlamaCppReference) {
  for (const Golden& g : kGolden) {
    uint8_t out[18];  // one block
    Q4_0Codec().quantize(g.x, out, 32, CodecParams{});
    EXPECT_EQ(block_test::ToHex(out, sizeof out), g.hex) << g.name;
  }
}

TEST(KvFormatQ4_0, LayoutAndBitsPerElement) {
  const RowCodec& c = Q4_0Codec();
  EXPECT_EQ(c.name, "q4_0");
  EXPECT_EQ(c.block_elems, 32);
  EXPECT_EQ(c.bits_per_element(128, CodecParams{}), 4.5);  // 18 B per 32 elements
  EXPECT_EQ(c.row_bytes(64, CodecParams{}), 2u * 18);
  EXPECT_EQ(c.row_bytes(128, CodecParams{}), 4u * 18);
}

// Bands are ~1.3x the measured relative RMS error (measured: Gaussian 0.0856; outlier rows, ordinary channels 0.709).
TEST(KvFormatQ4_0, RoundTripErrorGaussian) {
  const double err = block_test::RoundTripRelRms(Q4_0Codec(), block_test::Gaussian(256 * 128, 11), 128);
  std::printf("q4_0 gaussian rel-rms %.5f\n", err);
  EXPECT_LT(err, 0.111);
}

// Three channels per row 50x larger than the rest (outlier channels of real keys): the error on
// the ordinary channels that share a block with an outlier, relative to their own energy.
TEST(KvFormatQ4_0, RoundTripErrorOutlierChannels) {
  const std::vector<float> x = block_test::GaussianWithOutliers(256, 128, 12);
  const double all = block_test::RoundTripRelRms(Q4_0Codec(), x, 128);
  const double ordinary = block_test::RoundTripRelRms(Q4_0Codec(), x, 128, /*ordinary_only=*/true);
  std::printf("q4_0 outlier rows: rel-rms all %.5f, ordinary channels %.5f\n", all, ordinary);
  EXPECT_LT(ordinary, 0.92);
}

TEST(KvFormatQ4_0, DotAndAxpySimdMatchScalarReference) {
  codec_checks::ForEachPath([] { block_test::CheckDotAndAxpy(Q4_0Codec(), Q4_0CodecRef()); });
}

}  // namespace
}  // namespace kvaudit
