// The llama.cpp goldens of ../shared/golden/llamacpp/<name> (its README): the 96 input ids,
// llama.cpp's logits for each position, the greedy prompt and continuation, and for MoE models the
// experts llama.cpp chose. A missing file leaves its field empty, which the tests' size checks
// report as a failure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kvaudit {
class Model;
}

namespace kvaudit::testing {

struct LlamaCppGolden {
  std::string dir;                            // the folder
  std::vector<int32_t> ids;                   // [96]
  std::vector<float> logits;                  // [96, vocab], row i after ids[0..i]
  std::vector<int32_t> prompt, greedy;        // [16], [16]
  std::vector<std::vector<int32_t>> experts;  // MoE: [layer][96 * n_experts_used], best first
};

LlamaCppGolden ReadLlamaCppGolden(const std::string& name);

// Space-separated token ids (ids.txt, greedy.txt's lines).
std::vector<int32_t> ParseIds(const std::string& line);
// A raw little-endian f32 file (logits.f32): empty when missing, which size checks report.
std::vector<float> ReadF32File(const std::filesystem::path& p);

// [ids.size(), vocab] logits of kvaudit's engine over ids (f32 cache, a run configured for `context`
// tokens): one prefill, or with decode one token per call.
std::vector<float> GoldenLogits(const Model& m, const std::vector<int32_t>& ids, int context = 256, int threads = 2,
                                bool decode = false);

// The goldens' greedy protocol on kvaudit's engine (f32 cache, 2 threads, a run configured for
// `context` tokens): the prompt as one batch, then one argmax token per decode call (lowest id on
// ties), n_new of them.
std::vector<int32_t> GoldenGreedy(const Model& m, std::vector<int32_t> prompt, size_t n_new, int context = 256);

}  // namespace kvaudit::testing
