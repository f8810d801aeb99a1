// kvaudit info: what the model is, and what its KV cache costs.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "kv/f32_cache.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

int RunInfo(const ModelFlags& f) {
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
  auto cache = MakeF32Cache(c, 1);
  const double per_token = static_cast<double>(cache->bytes_per_token());
  std::printf("kv cache f32: %.0f bytes/token (all %d layers); %.1f MiB at %d tokens\n", per_token, c.n_layers,
              per_token * c.max_ctx / (1024.0 * 1024.0), c.max_ctx);
  return 0;
}

}  // namespace

CommandRunner AddInfoCommand(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  f->Add(app);
  return [f] { return RunInfo(*f); };
}

}  // namespace kvaudit::cli
