// The tiny phi3 golden as a Phi-3 LongRoPE model, exactly as tests/data/phi3_longrope/README.md
// specifies it (llama.cpp's logits for it are there): original context 256, attention factor
// sqrt(1.5), long factors 1 + 4i and short factors 1 + 0.05i, one per rotated pair; rope_dims < 16
// rotates only the first dims of each head (the README's rot8 variant, Phi-4-mini's partial rotary).
#pragma once

#include <filesystem>
#include <vector>

namespace kvaudit::testing {

inline constexpr int kPhi3LongRopeOriginal = 256;

std::vector<float> Phi3LongFactors(int rope_dims = 16);   // [rope_dims/2]
std::vector<float> Phi3ShortFactors(int rope_dims = 16);  // [rope_dims/2]
float Phi3LongRopeAttnFactor();                           // sqrt(1 + ln(4096 / 256) / ln(256)) as f32

// Writes dir/phi3-longrope[-rotN].gguf and returns its path.
std::filesystem::path WritePhi3LongRopeGguf(const std::filesystem::path& dir, int rope_dims = 16);

}  // namespace kvaudit::testing
