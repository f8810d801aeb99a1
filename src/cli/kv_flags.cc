#include "cli/kv_flags.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "run/text_data.h"
#include "kv/make_cache.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {

void KvFlags::Add(CLI::App& app) {
  app.add_option("--kv", kv, "KV cache configuration, e.g. k=q8_0,v=q4_0 or @policy.json (kvaudit formats; docs/formats.md)")
      ->capture_default_str();
  app.add_option("--kv-calib", kv_calib, "calibration text for fp8 scale=calib and outliers=N");
}

Expected<BuiltCache> BuildCache(const Model& model, const std::string& spec, const std::string& calib_file,
                                int max_positions, ThreadPool& pool, int reserve_positions) {
  BuiltCache built;
  KV_ASSIGN_OR_RETURN(built.policy, CachePolicy::FromArgument(spec));
  const bool needs = built.policy.NeedsCalibration();
  if (needs && calib_file.empty()) {
    // Validate reports the missing calibration with the spec in the message.
    KV_RETURN_IF_ERROR(built.policy.Validate(model.config(), false));
  }
  if (needs) {
    const Tokenizer* tok = model.tokenizer();
    if (!tok) return BadInput(calib_file + ": calibration needs a model with a tokenizer");
    KV_ASSIGN_OR_RETURN(std::vector<std::string> docs, LoadDocuments(calib_file));
    const std::vector<int32_t> ids = tok->Encode(JoinDocuments(docs), tok->add_bos_default());
    KV_ASSIGN_OR_RETURN(KvCalibration calib, CalibrateKv(model, ids, std::min(model.config().max_ctx, 4096), pool));
    built.calib = std::make_unique<KvCalibration>(std::move(calib));
  }
  KV_ASSIGN_OR_RETURN(built.cache, MakeCache(model.config(), built.policy, built.calib.get(), max_positions));
  KV_RETURN_IF_ERROR(built.cache->Reserve(reserve_positions < 0 ? max_positions : reserve_positions));
  return built;
}

}  // namespace kvaudit::cli
