#include "probe/runner.h"

#include <algorithm>

#include "run/cache_generator.h"
#include "eval/fidelity_metrics.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {

ProbeRunner::ProbeRunner(const Model& model, std::vector<KvCache*> caches, ThreadPool& pool)
    : model_(model), caches_(std::move(caches)), pool_(pool) {
  KV_CHECK(caches_.size() >= 2 && model_.tokenizer() != nullptr);
}

ProbeRecord ProbeRunner::RunChecked(const ProbeInstance& inst) {
  ProbeRecord rec;
  rec.id = inst.id, rec.family = inst.family, rec.variant = inst.variant;
  rec.length = inst.length, rec.depth = inst.depth, rec.expected = inst.expected_text;
  const Tokenizer& tok = *model_.tokenizer();
  SamplingParams greedy;  // temperature 0
  for (KvCache* cache : caches_) {
    CacheGenerator gen(model_, *cache, pool_);
    const std::vector<int32_t> ids = gen.Generate(inst.prompt, inst.max_tokens, greedy);
    ProbeRun run;
    run.text = tok.Decode(ids);
    const ProbeScore s = ScoreProbe(inst.check, ids, run.text, tok);
    run.pass = s.pass, run.first_wrong_token = s.first_wrong_token, run.detail = s.detail;
    rec.runs.push_back(std::move(run));
  }
  return rec;
}

VarianceRecord ProbeRunner::RunVariance(const std::string& id, int length, std::span<const int32_t> prompt,
                                        int samples, float temperature, int max_tokens, uint64_t first_seed) {
  VarianceRecord rec;
  rec.id = id, rec.length = length;
  for (KvCache* cache : caches_) {
    CacheGenerator gen(model_, *cache, pool_);
    std::vector<std::vector<int32_t>> outs;
    for (int k = 0; k < samples; ++k) {
      SamplingParams p;
      p.temperature = temperature;
      p.seed = first_seed + static_cast<uint64_t>(k);
      outs.push_back(gen.Generate(prompt, max_tokens, p));
    }
    rec.samples.push_back(std::move(outs));
  }
  return rec;
}

DriftRecord ProbeRunner::RunDrift(const std::string& id, int length, std::span<const int32_t> prompt, int max_tokens) {
  DriftRecord rec;
  rec.id = id, rec.length = length;
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  std::vector<float> base_logits;  // [n, vocab] of the baseline's steps
  SamplingParams greedy;
  {
    CacheGenerator gen(model_, *caches_[0], pool_);
    rec.outputs.push_back(gen.Generate(prompt, max_tokens, greedy, &base_logits));
  }
  const std::vector<int32_t> path = rec.outputs[0];  // a copy: outputs grows below
  for (size_t c = 1; c < caches_.size(); ++c) {
    CacheGenerator gen(model_, *caches_[c], pool_);
    rec.outputs.push_back(gen.Generate(prompt, max_tokens, greedy));
    const std::vector<float> forced = gen.ForcedLogits(prompt, path);  // [n, vocab]
    double sum = 0, mx = 0;
    BaseRow base;
    for (size_t i = 0; i < path.size(); ++i) {
      base.Set({base_logits.data() + i * vocab, vocab}, path[i]);
      const double kl = base.Compare({forced.data() + i * vocab, vocab}).kld;
      sum += kl, mx = std::max(mx, kl);
    }
    rec.kl_mean.push_back(path.empty() ? 0.0 : sum / static_cast<double>(path.size()));
    rec.kl_max.push_back(mx);
  }
  return rec;
}

}  // namespace kvaudit
