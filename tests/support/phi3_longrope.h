// The tiny phi3 golden as a Phi-3 LongRoPE model, exactly as tests/data/phi3_longrope/README.md
// specifies it (llama.cpp's logits for it are there): original context 256, attention factor
// sqrt(1.5), long factors 1 + 4i and short factors 1 + 0.05i.
#pragma once

#include <filesystem>
#include <vector>

namespace kvaudit::testing {

inline constexpr int kPhi3LongRopeOriginal = 256;

std::vector<float> Phi3LongFactors();   // [8]
std::vector<float> Phi3ShortFactors();  // [8]
float Phi3LongRopeAttnFactor();         // sqrt(1 + ln(4096 / 256) / ln(256)) as f32

// Writes dir/phi3-longrope.gguf and returns its path.
std::filesystem::path WritePhi3LongRopeGguf(const std::filesystem::path& dir);

}  // namespace kvaudit::testing
