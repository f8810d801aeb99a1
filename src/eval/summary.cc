#include "eval/summary.h"

namespace kvaudit {

size_t AttentionCells(const EvalRunInfo& info) {
  if (info.attn_samples <= 0) return 0;
  return static_cast<size_t>(info.n_layers) * info.n_kv_heads * info.aggregate.buckets.size();
}

std::vector<ConfigResult> SummarizeEval(const EvalSummaryInputs& in, const std::vector<WindowRecord>& records) {
  std::vector<int32_t> scored_tokens;  // [scored positions]
  for (const WindowRecord& r : records) scored_tokens.insert(scored_tokens.end(), r.tokens.begin(), r.tokens.end());
  // Token classes need the decoded text of each token: none without a tokenizer.
  const bool classed = !in.classes.empty();
  const std::vector<uint8_t> rare = RareTokens(scored_tokens, in.vocab_size);
  AggregateOptions agg = in.info.aggregate;
  agg.classes = classed ? &in.classes : nullptr;
  agg.rare = classed ? &rare : nullptr;
  const size_t attn_cells = AttentionCells(in.info);
  std::vector<int> from;
  for (const Bucket& b : agg.buckets) from.push_back(b.from);
  std::vector<ConfigResult> results;
  for (size_t c = 0; c < in.heads.size(); ++c) {
    ConfigResult r = in.heads[c];
    r.summary = SummarizeConfig(records, c, agg);
    if (attn_cells > 0) {
      std::vector<AttnCell> sum(attn_cells);  // summed in ascending window order (records are sorted)
      for (const WindowRecord& w : records) {
        for (size_t i = 0; i < attn_cells; ++i) sum[i].Add(w.attention[c][i]);
      }
      r.attention = SummarizeAttention(sum, in.info.n_layers, in.info.n_kv_heads, from);
      if (!in.info.layer_windows.empty()) {
        for (AttnSummary& a : r.attention) a.window = in.info.layer_windows[static_cast<size_t>(a.layer)];
      }
    }
    results.push_back(std::move(r));
  }
  return results;
}

namespace {

nlohmann::json InfoToJson(const EvalRunInfo& i) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const Bucket& b : i.aggregate.buckets) buckets.push_back({b.from, b.to});
  nlohmann::json j = {{"model", i.model},
                      {"data", i.data},
                      {"baseline_spec", i.baseline_spec},
                      {"model_hash", i.model_hash},
                      {"model_architecture", i.model_architecture},
                      {"n_layers", i.n_layers},
                      {"n_kv_heads", i.n_kv_heads},
                      {"head_dim", i.head_dim},
                      {"baseline_bytes_per_token", i.baseline_bytes_per_token},
                      {"ctx", i.ctx},
                      {"score_from", i.score_from},
                      {"per_doc", i.per_doc},
                      {"n_windows", i.n_windows},
                      {"first_window", i.first_window},
                      {"attn_samples", i.attn_samples},
                      {"tokens_hash", i.tokens_hash},
                      {"buckets", buckets},
                      {"kld_threshold", i.aggregate.kld_threshold},
                      {"bootstrap_replicates", i.aggregate.bootstrap.replicates},
                      {"bootstrap_seed", i.aggregate.bootstrap.seed},
                      {"baseline_endpoint", i.baseline_endpoint},
                      {"top_logprobs", i.top_logprobs},
                      {"notes", i.notes},
                      {"threads", i.threads}};
  if (!i.layer_windows.empty()) j["layer_windows"] = i.layer_windows;
  return j;
}

void InfoFromJson(const nlohmann::json& j, EvalRunInfo* i) {  // throws nlohmann's type_error on a bad shape
  j.at("model").get_to(i->model), j.at("data").get_to(i->data), j.at("baseline_spec").get_to(i->baseline_spec);
  j.at("model_hash").get_to(i->model_hash), j.at("model_architecture").get_to(i->model_architecture);
  j.at("n_layers").get_to(i->n_layers), j.at("n_kv_heads").get_to(i->n_kv_heads), j.at("head_dim").get_to(i->head_dim);
  j.at("baseline_bytes_per_token").get_to(i->baseline_bytes_per_token), j.at("ctx").get_to(i->ctx);
  j.at("score_from").get_to(i->score_from), j.at("per_doc").get_to(i->per_doc), j.at("n_windows").get_to(i->n_windows);
  j.at("first_window").get_to(i->first_window), j.at("attn_samples").get_to(i->attn_samples);
  j.at("tokens_hash").get_to(i->tokens_hash);
  for (const auto& b : j.at("buckets")) i->aggregate.buckets.push_back({b.at(0).get<int>(), b.at(1).get<int>()});
  j.at("kld_threshold").get_to(i->aggregate.kld_threshold);
  j.at("bootstrap_replicates").get_to(i->aggregate.bootstrap.replicates);
  j.at("bootstrap_seed").get_to(i->aggregate.bootstrap.seed);
  i->baseline_endpoint = j.at("baseline_endpoint");
  j.at("top_logprobs").get_to(i->top_logprobs), j.at("notes").get_to(i->notes), j.at("threads").get_to(i->threads);
  if (j.contains("layer_windows")) j.at("layer_windows").get_to(i->layer_windows);
}

}  // namespace

nlohmann::json EvalSummaryInputsToJson(const EvalSummaryInputs& in) {
  nlohmann::json heads = nlohmann::json::array();
  for (const ConfigResult& h : in.heads) {
    heads.push_back({{"spec", h.spec}, {"bytes_per_token", h.bytes_per_token}, {"endpoint", h.endpoint}});
  }
  std::string classes(in.classes.size(), '0');  // one digit per id: the TokenClass value
  for (size_t t = 0; t < in.classes.size(); ++t) classes[t] = static_cast<char>('0' + static_cast<int>(in.classes[t]));
  return {{"info", InfoToJson(in.info)}, {"configs", heads}, {"token_classes", classes}, {"vocab_size", in.vocab_size}};
}

Expected<EvalSummaryInputs> EvalSummaryInputsFromJson(const nlohmann::json& j) {
  EvalSummaryInputs in;
  // nlohmann's accessors throw on a wrong shape; caught here so nothing crosses the module.
  try {
    InfoFromJson(j.at("info"), &in.info);
    for (const auto& h : j.at("configs")) {
      ConfigResult r;
      h.at("spec").get_to(r.spec), h.at("bytes_per_token").get_to(r.bytes_per_token);
      r.endpoint = h.at("endpoint");
      in.heads.push_back(std::move(r));
    }
    for (const char c : j.at("token_classes").get<std::string>()) {
      if (c < '0' || c >= '0' + kNumTokenClasses) return BadInput("malformed token class table");
      in.classes.push_back(static_cast<TokenClass>(c - '0'));
    }
    j.at("vocab_size").get_to(in.vocab_size);
  } catch (const nlohmann::json::exception& e) {
    return BadInput(std::string("malformed eval summary inputs: ") + e.what());
  }
  return in;
}

}  // namespace kvaudit
