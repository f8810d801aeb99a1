// kvaudit info: what the model is, and what its KV cache costs.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/kv_flags.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

struct InfoFlags {
  ModelFlags model;
  std::string kv;
  std::string kv_calib;
  int ctx = 0;
};

int RunInfo(const InfoFlags& flags) {
  const ModelFlags& f = flags.model;
  auto loaded = Model::Load(f.model);
  if (!loaded) return ReportError(loaded.error());
  const Model& model = **loaded;
  const ModelConfig& c = model.config();
  std::printf("%s\n", model.Describe().c_str());
  if (const Tokenizer* tok = model.tokenizer()) {
    std::printf("tokenizer: %d tokens, bos %d, eos %d, adds bos: %s\n", tok->vocab_size(), tok->bos_id(),
                tok->eos_id(), tok->add_bos_default() ? "yes" : "no");
  } else {
    std::printf("tokenizer: none (use --ids-file)\n");
  }
  const int ctx = flags.ctx > 0 ? flags.ctx : c.max_ctx;
  ThreadPool pool(ResolveThreads(f.threads));
  for (const std::string& spec : {std::string("k=f32,v=f32"), flags.kv}) {
    if (spec.empty()) continue;
    auto built = BuildCache(model, spec, flags.kv_calib, ctx, pool, /*reserve_positions=*/0);  // sizes only
    if (!built) return ReportError(built.error());
    const double per_token = static_cast<double>(built->cache->bytes_per_token());
    std::printf("kv cache %s: %.1f bytes/token (%.1f per layer); %.2f MiB at %d tokens\n",
                built->policy.spec().c_str(), per_token, per_token / c.n_layers,
                per_token * ctx / (1024.0 * 1024.0), ctx);
  }
  return 0;
}

}  // namespace

CommandRunner AddInfoCommand(CLI::App& app) {
  auto f = std::make_shared<InfoFlags>();
  f->model.Add(app);
  app.add_option("--kv", f->kv, "also report the memory of this cache configuration");
  app.add_option("--kv-calib", f->kv_calib, "calibration text for configurations that need it");
  app.add_option("--ctx", f->ctx, "context length for the totals (default: the model's)");
  return [f] { return RunInfo(*f); };
}

}  // namespace kvaudit::cli
