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
#include "decide/targets/deploy_report.h"
#include "decide/targets/spec_memory.h"
#include "decide/targets/target_settings.h"
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
          {"rope", {{"type", rope}, {"theta", c.rope.theta}, {"dims", c.rope.RotatedDims(c.head_dim)}}},
          {"qkv_bias", c.attn_qkv_bias},
          {"qk_norm", c.qk_norm},
          {"tied_embeddings", c.tied_embeddings},
          {"sliding_window", c.sliding_window},
          {"sliding_layers", SlidingLayers(c)},
          {"attn_scale", c.attn_scale > 0 ? c.attn_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim))},
          {"attn_softcap", c.attn_softcap},
          {"final_softcap", c.final_softcap},
          {"attn_sinks", !c.attn_sinks.empty()},
          {"kv_scales", c.kv_scales.empty() ? nlohmann::json(nullptr)
                                            : nlohmann::json{{"source", c.kv_scales.source},
                                                             {"per", c.kv_scales.per_layer > 1 ? "kv_head" : "layer"},
                                                             {"k", c.kv_scales.k},
                                                             {"v", c.kv_scales.v}}},
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

// A cache in kvaudit's own accounting at ctx (decide/targets/spec_memory.h): global layers hold
// every position, sliding layers the window.
Expected<nlohmann::json> KvJson(const ModelConfig& c, const BuiltCache& built, int ctx) {
  KV_ASSIGN_OR_RETURN(const KvMemory m, SpecMemory(c, built.config, ctx, built.calib.get()));
  nlohmann::json j = {{"spec", built.config.spec()},
                      {"bytes_per_token", m.bytes_per_token},
                      {"bytes_per_token_per_layer", static_cast<double>(m.bytes_per_token) / c.n_layers},
                      {"ctx", ctx},
                      {"mib", static_cast<double>(m.bytes_at_target) / (1024.0 * 1024.0)},
                      {"layers", m.CellsText()}};
  j.update(MemoryJson(m));
  return j;
}

// llama.cpp's own figures (decide/targets/kv_memory.h) for the f16 cache and the --kv spec as
// llama.cpp runs it: the sliding layers' cells, and the --swa-full variant.
nlohmann::json LlamaCppJson(const ModelConfig& c, const std::vector<CacheConfig>& specs, int ctx) {
  nlohmann::json list = nlohmann::json::array();
  for (const CacheConfig& spec : specs) {
    const TargetSettings t = SettingsForTarget(DeployTarget::kLlamaCpp, spec, c, ctx);
    if (t.settings_for.empty()) continue;
    nlohmann::json j = {{"spec", spec.spec()}, {"settings_for", t.settings_for}, {"flags", t.flags}};
    j.update(MemoryJson(t.memory));
    j["memory_variants"] = nlohmann::json::array();
    for (const MemoryVariant& v : t.memory_variants) {
      j["memory_variants"].push_back({{"flag", v.flag}, {"text", MemoryTotalText(v.memory)}});
      j["memory_variants"].back().update(MemoryJson(v.memory));
    }
    j["text"] = MemoryTotalText(t.memory);
    list.push_back(std::move(j));
  }
  return list;
}

void PrintKv(const nlohmann::json& j, int ctx) {
  for (const nlohmann::json& kv : j["kv"]) {
    std::printf("kv cache %s: %.1f bytes/token (%.1f per layer) at %d tokens; %.2f MiB (%s)\n",
                kv["spec"].get<std::string>().c_str(), kv["bytes_per_token"].get<double>(),
                kv["bytes_per_token_per_layer"].get<double>(), ctx, kv["mib"].get<double>(),
                kv["layers"].get<std::string>().c_str());
  }
  for (const nlohmann::json& l : j["llamacpp"]) {
    std::printf("llama.cpp %s at %d tokens: %s; %s\n", l["settings_for"].get<std::string>().c_str(), ctx,
                l["text"].get<std::string>().c_str(), l["memory_layout"].get<std::string>().c_str());
    for (const nlohmann::json& v : l["memory_variants"]) {
      std::printf("  with %s: %s\n", v["flag"].get<std::string>().c_str(), v["text"].get<std::string>().c_str());
    }
  }
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
  KvSettings f16;
  f16.k = f16.v = KvFormat::kF16;
  std::vector<CacheConfig> llamacpp_specs = {CacheConfig::Uniform(f16)};  // [1 or 2]: f16, then --kv's
  for (const std::string& spec : {std::string("k=f32,v=f32"), flags.kv.kv}) {
    if (spec.empty()) continue;
    auto built = BuildCache(model, spec, flags.kv.kv_calib, ctx, pool, /*reserve_positions=*/0);  // sizes only
    if (!built) return ReportError(built.error());
    auto kv = KvJson(c, *built, ctx);
    if (!kv) return ReportError(kv.error());
    j["kv"].push_back(std::move(*kv));
    if (spec == flags.kv.kv && !(built->config == llamacpp_specs.front())) llamacpp_specs.push_back(built->config);
  }
  j["sliding_layers"] = c.n_sliding_layers();
  if (c.rope.is_longrope()) {
    j["model"]["rope"]["original_context"] = c.rope.original_max_position_embeddings;
    j["model"]["rope"]["attn_factor"] = c.rope.attn_factor;
    j["model"]["rope"]["factors_at_ctx"] = c.rope.UsesLongFactors(ctx) ? "long" : "short";
  }
  j["llamacpp"] = LlamaCppJson(c, llamacpp_specs, ctx);
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
  if (c.rope.is_longrope()) std::printf("%s\n", DescribeLongRope(c, ctx).c_str());
  if (c.n_sliding_layers() > 0) {
    std::printf("kv layers: %d global + %d sliding (window %d)\n", c.n_layers - c.n_sliding_layers(),
                c.n_sliding_layers(), c.sliding_window);
  }
  if (!c.kv_scales.empty()) {
    std::printf(
        "checkpoint kv scales: %s, per %s (what an engine quantizes an fp8/nvfp4 cache with; kvaudit: "
        "scale=ckpt)\n",
        c.kv_scales.source.c_str(), c.kv_scales.per_layer > 1 ? "KV head" : "layer");
  }
  PrintKv(j, ctx);
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
