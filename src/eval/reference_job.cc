#include "eval/reference_job.h"

#include <algorithm>
#include <filesystem>

#include "eval/reference_file.h"
#include "eval/remote_fidelity.h"
#include "job/job_runtime.h"
#include "model/forward.h"
#include "run/fingerprint.h"
#include "run/windows.h"

namespace kvaudit {
namespace {

int FirstScored(int score_from, size_t n) { return std::min(std::max(score_from, 0), static_cast<int>(n) - 1); }

// The baseline's rows of every window, in process: its cache run teacher-forced in chunks, each
// scored row reduced to its top k at once (memory holds one chunk's logits).
Status RowsInProcess(const ModelRuntime& runtime, const KvConfigs& configs, int ctx, int k,
                     std::vector<ReferenceWindow>& out) {
  int max_len = 0;
  for (const ReferenceWindow& w : out) max_len = std::max(max_len, static_cast<int>(w.ids.size()));
  KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, configs.MakeCache(0, max_len));
  const Model& model = *runtime.model;
  const size_t vocab = static_cast<size_t>(model.config().vocab_size);
  Forward forward(model, *cache, *runtime.pool, ctx);
  const int chunk = Forward::kMaxChunk;
  std::vector<float> logits(static_cast<size_t>(chunk) * vocab);  // [chunk, vocab]
  for (ReferenceWindow& w : out) {
    const int n = static_cast<int>(w.ids.size());
    cache->Reset();
    w.rows.resize(static_cast<size_t>(n - 1 - w.first_pos));
    for (int start = 0; start < n - 1; start += chunk) {
      const int len = std::min(chunk, n - 1 - start);
      const bool need = start + len > w.first_pos;
      forward.Run(std::span<const int32_t>(w.ids.data() + start, static_cast<size_t>(len)), start, logits.data(), need);
      if (!need) continue;
      const int r0 = std::max(0, w.first_pos - start);
      runtime.pool->ParallelFor(len - r0, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int r = r0 + static_cast<int>(i), p = start + r;
          const std::span<const float> row(logits.data() + static_cast<size_t>(r) * vocab, vocab);
          w.rows[static_cast<size_t>(p - w.first_pos)] = TopKRowOf(row, w.ids[static_cast<size_t>(p) + 1], k);
        }
      });
    }
  }
  return Status::Ok();
}

// The same through the baseline server's prompt logprobs (or llama-server's teacher forcing).
Status RowsFromServer(RemoteBackend& server, int k, std::vector<ReferenceWindow>& out) {
  for (ReferenceWindow& w : out) {
    KV_ASSIGN_OR_RETURN(std::vector<TopKRows> rows,
                        FetchTopKRows({&server}, w.ids, k, static_cast<size_t>(w.first_pos)));
    w.rows.assign(rows[0].begin() + w.first_pos, rows[0].end());
  }
  return Status::Ok();
}

}  // namespace

Expected<ReferenceSummary> MakeReference(EvalOptions o) {
  if (!o.kv.kv.empty() || !o.remote.endpoints.empty()) {
    return BadInput(
        "reference stores a baseline only; hint: drop --kv/--endpoint and compare them with "
        "kvaudit eval --reference FILE");
  }
  if (o.out.empty() || o.out == "kvaudit-eval")
    return BadInput("reference needs --out FILE; hint: e.g. --out f16.kvref");
  KV_ASSIGN_OR_RETURN(ModelRuntime runtime, LoadJobRuntime(o.model, o.threads, o.kv, o.remote));
  KV_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> all, EvalPlan::CutWindows(runtime, "reference", o));
  if (o.score_from > o.ctx - 2) {
    return BadInput("--score-from " + std::to_string(o.score_from) + " leaves no position to score in windows of " +
                    std::to_string(o.ctx) + "; hint: use at most ctx-2");
  }
  const std::string tokens_hash = HexHash(HashWindows(all));
  KV_ASSIGN_OR_RETURN(auto windows, SelectWindows(std::move(all), o.first_window, o.windows));
  ReferenceFile ref;
  for (size_t i = 0; i < windows.size(); ++i) {
    ReferenceWindow w;
    w.window = o.first_window + static_cast<int>(i);
    w.first_pos = FirstScored(o.score_from, windows[i].size());
    w.ids = std::move(windows[i]);
    ref.windows.push_back(std::move(w));
  }
  nlohmann::json baseline;
  const Tokenizer* tok = runtime.model->tokenizer();
  int k = o.top_logprobs;
  if (!o.remote.baseline_endpoint.empty()) {
    std::vector<std::string> samples;
    for (size_t w = 0; w < ref.windows.size() && w < 3; ++w) {
      const auto& ids = ref.windows[w].ids;
      samples.push_back(tok->Decode(std::span<const int32_t>(ids).first(std::min<size_t>(ids.size(), 256))));
    }
    KV_ASSIGN_OR_RETURN(RemoteConfigs remote, ConnectEvalEndpoints(o.remote, false, &k, *tok, samples));
    const RemoteConfig& b = *remote.baseline();
    baseline = b.Describe();
    KV_RETURN_IF_ERROR(RowsFromServer(*b.backend, k, ref.windows));
  } else {
    if (k == 0) k = kUncappedTopK;
    if (k < kMinTopK) {
      return BadInput("--top-logprobs " + std::to_string(k) + " is below " + std::to_string(kMinTopK) +
                      "; hint: top-5 drop needs 5");
    }
    o.kv.context = o.ctx;
    KV_ASSIGN_OR_RETURN(KvConfigs configs, KvConfigs::Prepare(*runtime.model, o.kv, *runtime.pool));
    baseline = configs.config(0).spec();
    KV_RETURN_IF_ERROR(RowsInProcess(runtime, configs, o.ctx, k, ref.windows));
  }
  int64_t positions = 0;
  for (const ReferenceWindow& w : ref.windows) positions += static_cast<int64_t>(w.rows.size());
  const ModelIdentity id = IdentifyModel(*runtime.model);
  ref.header = {{"kind", "kvaudit-reference"},
                {"version", 1},
                {"model", o.model},
                {"model_hash", id.hash},
                {"model_hash_kind", id.kind},
                {"config_tokenizer_hash", HexHash(HashModelConfigTokenizer(*runtime.model))},
                {"data", o.data},
                {"tokens_hash", tokens_hash},
                {"ctx", o.ctx},
                {"per_doc", o.per_doc},
                {"score_from", o.score_from},
                {"first_window", o.first_window},
                {"top_k", k},
                {"baseline", baseline},
                {"positions", positions}};
  KV_RETURN_IF_ERROR(WriteReference(o.out, ref));
  std::error_code ec;
  ReferenceSummary s;
  s.path = o.out, s.windows = static_cast<int>(ref.windows.size()), s.positions = positions, s.top_k = k;
  s.bytes = static_cast<uint64_t>(std::filesystem::file_size(o.out, ec));
  s.baseline = baseline.is_string() ? baseline.get<std::string>() : baseline.value("name", std::string("endpoint"));
  return s;
}

}  // namespace kvaudit
