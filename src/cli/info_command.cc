// kvaudit info: what the model is, and what its KV cache costs.
#include <CLI/CLI.hpp>
#include "base/json_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "base/isa.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "run/model_runtime.h"
#include "run/kv_configs.h"
#include "run/provenance.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

std::vector<std::string> SupportedIsaNames() {  // best first
  std::vector<std::string> names;
  for (Isa isa : SupportedIsas()) names.insert(names.begin(), IsaName(isa));
  return names;
}

struct InfoFlags {
  ModelFlags model;
  KvFlags kv{"", ""};  // none by default: only the f32 cache is reported
  int ctx = 0;
  bool json = false;
};

// The indices of the layers that attend through the sliding window.
std::vector<int> SlidingLayers(const ModelConfig& c) {
  std::vector<int> out;
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.is_sliding(l)) out.push_back(l);
  }
  return out;
}

// `info --json`: what Model::Describe prints, as data (docs/cli.md).
nlohmann::json ModelJson(const Model& model) {
  const ModelConfig& c = model.config();
  const char* rope = RopeTypeName(c.rope.type);
  nlohmann::json dtypes = nlohmann::json::object();
  for (const auto& [name, n] : model.weights().source_dtypes) dtypes[name] = n;
  return {{"path", model.path()},
          {"format", model.format()},
          {"architecture", ArchName(c.arch)},
          {"layers", c.n_layers},
          {"hidden", c.d_model},
          {"heads", c.n_heads},
          {"kv_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},
          {"ffn", c.d_ff},
          {"vocab", c.vocab_size},
          {"context", c.max_ctx},
          {"rms_eps", c.rms_eps},
          {"rope", {{"type", rope}, {"theta", c.rope.theta}}},
          {"qkv_bias", c.attn_qkv_bias},
          {"qk_norm", c.qk_norm},
          {"tied_embeddings", c.tied_embeddings},
          {"sliding_window", c.sliding_window},
          {"sliding_layers", SlidingLayers(c)},
          {"attn_scale", c.attn_scale > 0 ? c.attn_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim))},
          {"attn_softcap", c.attn_softcap},
          {"final_softcap", c.final_softcap},
          {"attn_sinks", !c.attn_sinks.empty()},
          {"unapplied_sliding_window", c.unapplied_sliding_window},
          {"experts", c.n_experts},
          {"experts_used", c.n_experts_used},
          {"expert_ffn", c.expert_ff},
          {"norm_topk", c.norm_topk},
          {"parameters", model.weights().n_params},
          {"stored_dtypes", dtypes},
          {"weights_bytes", model.weights().bytes()},
          {"weights_in_memory", model.weights().storage_summary()},
          {"weights_mapped", !model.weights().mappings.empty()}};
}

nlohmann::json TokenizerJson(const Tokenizer* tok) {
  if (!tok) return nullptr;
  return {{"vocab", tok->vocab_size()},
          {"bos", tok->bos_id()},
          {"eos", tok->eos_id()},
          {"adds_bos", tok->add_bos_default()}};
}

int RunInfo(const InfoFlags& flags) {
  const ModelFlags& f = flags.model;
  auto model_path = f.Resolve();
  if (!model_path) return ReportError(model_path.error());
  auto loaded = Model::Load(*model_path);
  if (!loaded) return ReportError(loaded.error());
  const Model& model = **loaded;
  const ModelConfig& c = model.config();
  auto resolved_ctx = ResolveContext(flags.ctx, c, c.max_ctx, 1);
  if (!resolved_ctx) return ReportError(resolved_ctx.error());
  const int ctx = *resolved_ctx;
  nlohmann::json j = {{"model", ModelJson(model)},
                      {"tokenizer", TokenizerJson(model.tokenizer())},
                      {"kv", nlohmann::json::array()},
                      {"kernels", SimdPath()},
                      {"kernels_supported", SupportedIsaNames()}};
  // Every cache is built (its spec validated) before anything is printed: a bad --kv is one line
  // on stderr and nothing on stdout.
  ThreadPool pool(ResolveThreads(f.threads));
  for (const std::string& spec : {std::string("k=f32,v=f32"), flags.kv.kv}) {
    if (spec.empty()) continue;
    auto built = BuildCache(model, spec, flags.kv.kv_calib, ctx, pool, /*reserve_positions=*/0);  // sizes only
    if (!built) return ReportError(built.error());
    const double per_token = static_cast<double>(built->cache->bytes_per_token());
    j["kv"].push_back({{"spec", built->config.spec()},
                       {"bytes_per_token", built->cache->bytes_per_token()},
                       {"bytes_per_token_per_layer", per_token / c.n_layers},
                       {"ctx", ctx},
                       {"mib", per_token * ctx / (1024.0 * 1024.0)}});
  }
  if (flags.json) {
    std::printf("%s\n", JsonText(j, 2).c_str());
    return 0;
  }
  std::printf("%s\n", model.Describe().c_str());
  // Chosen at run time from the CPU (base/isa.h); KVAUDIT_ISA forces a path.
  std::string supported;
  for (const std::string& name : SupportedIsaNames()) supported += (supported.empty() ? "" : ", ") + name;
  std::printf("kernels: %s (chosen at run time%s; this CPU runs %s)\n", SimdPath(),
              std::getenv("KVAUDIT_ISA") && *std::getenv("KVAUDIT_ISA") ? ", forced by KVAUDIT_ISA" : "",
              supported.c_str());
  if (const Tokenizer* tok = model.tokenizer()) {
    std::printf("tokenizer: %d tokens, bos %d, eos %d, adds bos: %s\n", tok->vocab_size(), tok->bos_id(), tok->eos_id(),
                tok->add_bos_default() ? "yes" : "no");
  } else {
    std::printf("tokenizer: none (use --ids-file)\n");
  }
  for (const nlohmann::json& kv : j["kv"]) {
    std::printf("kv cache %s: %.1f bytes/token (%.1f per layer); %.2f MiB at %d tokens\n",
                kv["spec"].get<std::string>().c_str(), kv["bytes_per_token"].get<double>(),
                kv["bytes_per_token_per_layer"].get<double>(), kv["mib"].get<double>(), ctx);
  }
  return 0;
}

}  // namespace

CommandRunner AddInfoCommand(CLI::App& app) {
  auto f = std::make_shared<InfoFlags>();
  f->model.Add(app);
  f->kv.Add(app, "also report the memory of this cache configuration");
  AddCtxFlag(app, f->ctx, "the length the totals are for (default: the model's context)");
  AddJsonFlag(app, f->json);
  return [f] { return RunInfo(*f); };
}

}  // namespace kvaudit::cli
