#include "probe/runner.h"

#include <algorithm>

#include "eval/fidelity_metrics.h"
#include "eval/topk_fidelity.h"

namespace kvaudit {

ProbeRunner::ProbeRunner(const Tokenizer& tokenizer, size_t vocab, std::vector<GenerationBackend*> backends)
    : tokenizer_(tokenizer), vocab_(vocab), backends_(std::move(backends)) {
  KV_CHECK(backends_.size() >= 2 && vocab_ > 0);
}

Expected<ProbeRecord> ProbeRunner::RunChecked(const ProbeInstance& inst) {
  ProbeRecord rec;
  rec.id = inst.id, rec.family = inst.family, rec.variant = inst.variant;
  rec.length = inst.length, rec.depth = inst.depth, rec.expected = inst.expected_text;
  if (sliding_window_ > 0 && inst.fact_token >= 0 && (inst.family == "needle" || inst.family == "exact")) {
    // The query at the prompt's last position p reads keys [p - window + 1, p] on a sliding layer.
    const int last = static_cast<int>(inst.prompt.size()) - 1;
    rec.fact_distance = last - (inst.fact_token + inst.fact_tokens - 1);
    rec.beyond_window = rec.fact_distance >= sliding_window_;
  }
  SamplingParams greedy;  // temperature 0
  for (GenerationBackend* backend : backends_) {
    KV_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, backend->Generate(inst.prompt, inst.max_tokens, greedy));
    ProbeRun run;
    run.text = tokenizer_.Decode(ids);
    const ProbeScore s = ScoreProbe(inst.check, ids, run.text, tokenizer_);
    run.pass = s.pass, run.first_wrong_token = s.first_wrong_token, run.detail = s.detail;
    rec.runs.push_back(std::move(run));
  }
  return rec;
}

Expected<VarianceRecord> ProbeRunner::RunVariance(const std::string& id, int length, std::span<const int32_t> prompt,
                                                  int samples, float temperature, int max_tokens, uint64_t first_seed) {
  VarianceRecord rec;
  rec.id = id, rec.length = length;
  for (GenerationBackend* backend : backends_) {
    std::vector<std::vector<int32_t>> outs;
    for (int k = 0; k < samples; ++k) {
      SamplingParams p;
      p.temperature = temperature;
      p.seed = first_seed + static_cast<uint64_t>(k);
      KV_ASSIGN_OR_RETURN(std::vector<int32_t> ids, backend->Generate(prompt, max_tokens, p));
      outs.push_back(std::move(ids));
    }
    rec.samples.push_back(std::move(outs));
  }
  return rec;
}

namespace {

// One side of a drift comparison along a path: full logits (an in-process cache) or the server's
// top-k rows (an endpoint), each [path.size()] positions.
struct ForcedSide {
  bool full = false;
  std::vector<float> logits;  // [n, vocab] when full
  std::vector<TopKRow> rows;  // [n] otherwise
};

Expected<ForcedSide> Forced(GenerationBackend& b, std::span<const int32_t> prompt, std::span<const int32_t> path) {
  ForcedSide side;
  side.full = b.has_full_logits();
  if (side.full) {
    side.logits = b.ForcedLogits(prompt, path);
  } else {
    KV_ASSIGN_OR_RETURN(side.rows, b.ForcedTopK(prompt, path, std::min(b.max_top_k(), 20)));
  }
  return side;
}

// KL(base ‖ cfg) at position i: exact between full sides, else the top-k lower bound
// (eval/topk_fidelity.h).
double KlAt(const ForcedSide& base, const ForcedSide& cfg, size_t i, int32_t token, size_t vocab, BaseRow& row) {
  if (base.full) {
    row.Set({base.logits.data() + i * vocab, vocab}, token);
    return cfg.full ? row.Compare({cfg.logits.data() + i * vocab, vocab}).kld : CompareTopK(row, cfg.rows[i]).kld;
  }
  return cfg.full ? CompareTopK(base.rows[i], {cfg.logits.data() + i * vocab, vocab}).kld
                  : CompareTopK(base.rows[i], cfg.rows[i]).kld;
}

}  // namespace

Expected<DriftRecord> ProbeRunner::RunDrift(const std::string& id, int length, std::span<const int32_t> prompt,
                                            int max_tokens) {
  for (GenerationBackend* b : backends_)
    KV_CHECK_MSG(b->has_full_logits() || b->has_forced_top_k(), "drift needs logits");
  DriftRecord rec;
  rec.id = id, rec.length = length;
  SamplingParams greedy;
  KV_ASSIGN_OR_RETURN(std::vector<int32_t> path, backends_[0]->Generate(prompt, max_tokens, greedy));
  // The baseline teacher-forced on its own greedy path: in-process, the same logits generation
  // sampled from (one canonical order: prefill and decode give the same bits).
  KV_ASSIGN_OR_RETURN(const ForcedSide base, Forced(*backends_[0], prompt, path));
  rec.outputs.push_back(path);
  for (size_t c = 1; c < backends_.size(); ++c) {
    KV_ASSIGN_OR_RETURN(std::vector<int32_t> own, backends_[c]->Generate(prompt, max_tokens, greedy));
    rec.outputs.push_back(std::move(own));
    KV_ASSIGN_OR_RETURN(const ForcedSide cfg, Forced(*backends_[c], prompt, path));
    double sum = 0, mx = 0;
    BaseRow row;
    for (size_t i = 0; i < path.size(); ++i) {
      const double kl = KlAt(base, cfg, i, path[i], vocab_, row);
      sum += kl, mx = std::max(mx, kl);
    }
    rec.kl_mean.push_back(path.empty() ? 0.0 : sum / static_cast<double>(path.size()));
    rec.kl_max.push_back(mx);
  }
  return rec;
}

}  // namespace kvaudit
