// Token sampling for `generate` and the probes: greedy, temperature, top-k, top-p (nucleus) and
// min-p, seeded and reproducible on every platform (own uniform draw from std::mt19937_64 bits,
// because std::uniform_real_distribution is implementation-defined).
// Filter order follows Hugging Face's logits processors: temperature, then top-k, top-p, min-p; the
// final inverse-CDF draw walks the survivors in token-id order (see Sample).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace kvaudit {

struct SamplingParams {
  float temperature = 0.0f;  // <= 0: greedy (argmax; ties go to the lowest id)
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  uint64_t seed = 1;
};

// The lowest index holding the maximum (NaNs never win).
int32_t Argmax(std::span<const float> logits);

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // logits: [vocab]. Not modified.
  int32_t Sample(std::span<const float> logits);

 private:
  double UniformDraw();  // in [0, 1), 53 random bits

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // [vocab] scratch: (logit/T, id)
  std::vector<std::pair<int32_t, double>> kept_;       // [survivors] scratch: (id, probability)
};

}  // namespace kvaudit
