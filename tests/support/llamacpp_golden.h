// The llama.cpp goldens of ../shared/golden/llamacpp/<name> (its README): the 96 input ids,
// llama.cpp's logits for each position, the greedy prompt and continuation, and for MoE models the
// experts llama.cpp chose. A missing file leaves its field empty, which the tests' size checks
// report as a failure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvaudit::testing {

struct LlamaCppGolden {
  std::string dir;                            // the folder
  std::vector<int32_t> ids;                   // [96]
  std::vector<float> logits;                  // [96, vocab], row i after ids[0..i]
  std::vector<int32_t> prompt, greedy;        // [16], [16]
  std::vector<std::vector<int32_t>> experts;  // MoE: [layer][96 * n_experts_used], best first
};

LlamaCppGolden ReadLlamaCppGolden(const std::string& name);

}  // namespace kvaudit::testing
