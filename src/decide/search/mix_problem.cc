#include "decide/search/mix_problem.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kvaudit {
namespace {

constexpr uint64_t kMaxPartBytes = 1ull << 40;  // far above any tensor; keeps every sum in 64 bits

std::string PartName(const Part& p) { return "layer " + std::to_string(p.layer) + " " + p.tensor; }

void CheckCoverage(const std::vector<Part>& parts) {
  KV_CHECK_MSG(!parts.empty() && parts.size() % 2 == 0, "a mix problem needs one K and one V part per layer");
  const int n_layers = static_cast<int>(parts.size() / 2);
  std::vector<int> seen(parts.size(), 0);  // [2 · n_layers]
  for (const Part& p : parts) {
    KV_CHECK_MSG(p.tensor == 'k' || p.tensor == 'v', ("part tensor must be 'k' or 'v': " + PartName(p)).c_str());
    KV_CHECK_MSG(p.layer >= 0 && p.layer < n_layers,
                 (PartName(p) + ": the parts must cover layers 0.." + std::to_string(n_layers - 1)).c_str());
    int& times = seen[MixProblem::Index(p.layer, p.tensor)];
    ++times;
    KV_CHECK_MSG(times == 1, (PartName(p) + " is given twice").c_str());
  }
}

// Costs are summed as integers so that a sum does not depend on its order (the searches add
// parts in different orders): units of 2^-52 of an upper bound S on |any total|, so every
// partial sum is an integer below 2^53 and converts back to double exactly.
double QuantumFor(const std::vector<Part>& parts) {
  double bound = 0;
  for (const Part& p : parts) {
    double worst = 0;
    for (const PartChoice& c : p.choices) worst = std::max(worst, std::fabs(c.cost));
    bound += worst;
  }
  if (bound == 0) return 1;
  int exp = 0;
  std::frexp(bound, &exp);  // bound < 2^exp
  return std::ldexp(1.0, exp - 52);
}

}  // namespace

MixProblem MixProblem::FromPartsOrDie(std::vector<Part> parts) {
  CheckCoverage(parts);
  MixProblem m;
  m.parts_.resize(parts.size());
  for (Part& p : parts) m.parts_[Index(p.layer, p.tensor)] = std::move(p);
  for (int l = 0; l < m.n_layers(); ++l) {
    KV_CHECK_MSG(m.parts_[Index(l, 'k')].sliding == m.parts_[Index(l, 'v')].sliding,
                 ("layer " + std::to_string(l) + "'s K and V parts disagree on whether it slides").c_str());
  }
  m.quantum_ = QuantumFor(m.parts_);
  std::optional<AttentionMode> attention;
  for (const Part& p : m.parts_) {
    KV_CHECK_MSG(!p.choices.empty() && p.choices.size() <= kMaxChoices,
                 (PartName(p) + ": 1 to 16 choices per part").c_str());
    std::vector<Candidate>& cands = m.cands_.emplace_back();
    std::vector<int64_t>& fixed = m.fixed_.emplace_back();
    for (const PartChoice& c : p.choices) {
      auto cand = ParseCandidate(c.candidate, p.tensor);
      KV_CHECK_MSG(cand.ok(), (PartName(p) + ": " + (cand.ok() ? "" : cand.error().message)).c_str());
      for (const Candidate& other : cands) {
        KV_CHECK_MSG(other.text != cand->text, (PartName(p) + ": candidate " + cand->text + " given twice").c_str());
      }
      KV_CHECK_MSG(std::isfinite(c.cost), (PartName(p) + " " + cand->text + ": cost is not finite").c_str());
      KV_CHECK_MSG(c.bytes_per_token < kMaxPartBytes, (PartName(p) + " " + cand->text + ": bytes above 2^40").c_str());
      if (cand->attention) {
        KV_CHECK_MSG(!attention || *attention == *cand->attention,
                     ("engine= is whole-cache (docs/formats.md), but " + PartName(p) + " " + cand->text +
                      " names another engine than an earlier choice; give every choice the same engine")
                         .c_str());
        attention = cand->attention;
      }
      fixed.push_back(std::llround(c.cost / m.quantum_));
      cands.push_back(std::move(*cand));
    }
  }
  m.attention_ = attention.value_or(AttentionMode::kNative);
  if (m.attention_ == AttentionMode::kLlamaCpp) m.CheckLlamaCppChoices();
  m.BuildCompat();
  return m;
}

// Whether two candidates share a layer depends on their texts only: one ShareLayer per pair.
void MixProblem::BuildCompat() {
  std::map<std::pair<std::string, std::string>, bool> shares;
  for (int l = 0; l < n_layers(); ++l) {
    const auto& ks = cands_[Index(l, 'k')];
    const auto& vs = cands_[Index(l, 'v')];
    std::vector<uint8_t>& row = compat_.emplace_back(ks.size() * vs.size(), 0);
    for (size_t a = 0; a < ks.size(); ++a) {
      for (size_t b = 0; b < vs.size(); ++b) {
        auto [it, added] = shares.try_emplace({ks[a].text, vs[b].text}, false);
        if (added) it->second = ShareLayer(ks[a], vs[b], attention_).has_value();
        row[a * vs.size() + b] = it->second;
      }
    }
    KV_CHECK_MSG(std::find(row.begin(), row.end(), 1) != row.end(),
                 ("layer " + std::to_string(l) + ": no K choice can share the layer with any V choice").c_str());
  }
}

// Under engine=llama.cpp the grammar accepts only llama.cpp's cache types and no kvaudit-only
// protection (kv/config/cache_config_validate.cc), whatever the model: a choice set that breaks
// this would render specs that no cache accepts.
void MixProblem::CheckLlamaCppChoices() const {
  for (size_t i = 0; i < parts_.size(); ++i) {
    for (const Candidate& c : cands_[i]) {
      const TensorStorage s = StorageOf(c, parts_[i].tensor, attention_);
      KV_CHECK_MSG(HasLlamaCppType(c.format) && s.sink == 0 && s.recent == 0 && s.outliers == 0 && !s.pre_rope,
                   (PartName(parts_[i]) + " " + c.text +
                    ": engine=llama.cpp has no such cache type or protection (sink, recent, outliers, prerope)")
                       .c_str());
    }
  }
}

bool MixProblem::Compatible(int layer, int k_choice, int v_choice) const {
  const size_t n_v = cands_[Index(layer, 'v')].size();
  return compat_[layer][static_cast<size_t>(k_choice) * n_v + v_choice] != 0;
}

MixPoint MixProblem::Evaluate(std::vector<uint8_t> choice) const {
  KV_CHECK(choice.size() == parts_.size());
  MixPoint p;
  int64_t cost = 0;
  for (size_t i = 0; i < parts_.size(); ++i) {
    KV_CHECK(choice[i] < parts_[i].choices.size());
    p.bytes_per_token += parts_[i].choices[choice[i]].bytes_per_token;
    cost += fixed_[i][choice[i]];
  }
  p.cost = static_cast<double>(cost) * quantum_;
  p.choice = std::move(choice);
  return p;
}

bool MixProblem::Runs(const std::vector<uint8_t>& choice) const {
  if (!runs_) return true;
  MixPoint p;
  p.choice = choice;
  return runs_(Config(p));
}

CacheConfig MixProblem::Config(const MixPoint& point) const {
  KV_CHECK(point.choice.size() == parts_.size());
  std::vector<LayerCandidates> layers;  // [n_layers]
  for (int l = 0; l < n_layers(); ++l) {
    const int k = point.choice[Index(l, 'k')], v = point.choice[Index(l, 'v')];
    KV_CHECK_MSG(Compatible(l, k, v), "a point's K and V choices must share their layer");
    layers.push_back({&cands_[Index(l, 'k')][k], &cands_[Index(l, 'v')][v]});
  }
  std::vector<bool> sliding;  // [n_layers]
  for (int l = 0; l < n_layers(); ++l) sliding.push_back(this->sliding(l));
  return RenderMixSpec(layers, attention_, sliding);
}

bool MixProblem::HasBothLayerKinds() const {
  bool some = false, all = true;
  for (int l = 0; l < n_layers(); ++l) {
    some = some || sliding(l);
    all = all && sliding(l);
  }
  return some && !all;
}

}  // namespace kvaudit
