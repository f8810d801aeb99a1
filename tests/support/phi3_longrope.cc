#include "support/phi3_longrope.h"

#include <cmath>

#include "base/status.h"
#include "support/fixtures.h"
#include "support/gguf_rewrite.h"

namespace kvaudit::testing {

std::vector<float> Phi3LongFactors(int rope_dims) {
  std::vector<float> f;
  for (int i = 0; i < rope_dims / 2; ++i) f.push_back(static_cast<float>(1 + 4 * i));
  return f;
}

std::vector<float> Phi3ShortFactors(int rope_dims) {
  std::vector<float> f;
  for (int i = 0; i < rope_dims / 2; ++i) f.push_back(static_cast<float>(1.0 + 0.05 * i));  // in double, then f32
  return f;
}

// As llama.cpp's conversion/phi.py computes it from context_length 4096 over the original.
float Phi3LongRopeAttnFactor() {
  return static_cast<float>(std::sqrt(1 + std::log(4096.0 / kPhi3LongRopeOriginal) / std::log(256.0)));
}

std::filesystem::path WritePhi3LongRopeGguf(const std::filesystem::path& dir, int rope_dims) {
  GgufValue orig, attn, dims;
  orig.type = GgufType::kU32, orig.i = kPhi3LongRopeOriginal;
  attn.type = GgufType::kF32, attn.f = Phi3LongRopeAttnFactor();
  dims.type = GgufType::kU32, dims.i = rope_dims;
  const std::string name =
      rope_dims == 16 ? "phi3-longrope.gguf" : "phi3-longrope-rot" + std::to_string(rope_dims) + ".gguf";
  const std::filesystem::path out = dir / name;
  const Status st = RewriteGguf(Fixture("golden/llamacpp/phi3/model.gguf").string(), out.string(),
                                {{"phi3.rope.dimension_count", dims},
                                 {"phi3.rope.scaling.original_context_length", orig},
                                 {"phi3.rope.scaling.attn_factor", attn}},
                                {{"rope_factors_long.weight", Phi3LongFactors(rope_dims)},
                                 {"rope_factors_short.weight", Phi3ShortFactors(rope_dims)}});
  KV_CHECK_MSG(st.ok(), st.ok() ? "" : st.error().message.c_str());
  return out;
}

}  // namespace kvaudit::testing
