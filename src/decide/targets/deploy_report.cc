#include "decide/targets/deploy_report.h"

#include <cstdio>

#include "base/text_columns.h"

namespace kvaudit {
namespace {

std::string Pad(const std::string& text, size_t width) { return PadColumn(text, width); }

std::string Number(const char* fmt, double x, size_t width) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, x);
  const std::string t = buf;
  return t.size() >= width ? t : std::string(width - t.size(), ' ') + t;
}

std::string Joined(const std::vector<std::string>& parts, const std::string& sep) { return JoinWith(parts, sep); }

std::string Header(const DeployContext& d) {
  const ModelConfig& c = *d.config;
  const int sliding = c.n_sliding_layers();
  const std::string layers =
      std::to_string(c.n_layers) + " layers" +
      (sliding ? " (" + std::to_string(sliding) + " sliding, window " + std::to_string(c.sliding_window) + ")" : "");
  return "kv cache " + d.spec + " for " + d.model + " (" + ArchName(c.arch) + ", " + layers + ", " +
         std::to_string(c.n_kv_heads) + " KV heads x head_dim " + std::to_string(c.head_dim) + ") at " +
         std::to_string(d.ctx) + " tokens\n" +
         (c.rope.is_longrope() ? DescribeLongRope(c, d.ctx) + "\n" : std::string()) +
         "Settings only: nothing here is measured. Verify the spec you deploy (kvaudit eval, probe).\n\n";
}

std::string SummaryRow(const std::string& engine, const std::string& exact, const std::string& spec,
                       const KvMemory& m) {
  return Pad(engine, 14) + Pad(exact, 7) + Pad(spec.empty() ? "-" : spec, 44) +
         Number("%.0f", static_cast<double>(m.bytes_per_token), 16) + Number("%.3f", m.gib_at_target, 10) + "\n";
}

// bytes/token is the cache at the target context over the context (kv_memory.h).
std::string Summary(const DeployContext& d, const std::vector<TargetSettings>& targets) {
  std::string s = Pad("engine", 14) + Pad("exact", 7) + Pad("settings for", 44) + "  KV bytes/token" + "  GiB at " +
                  std::to_string(d.ctx) + "\n";
  for (const TargetSettings& e : targets) {
    s += SummaryRow(std::string(TargetName(e.target)), e.exact ? "yes" : "no", e.settings_for, e.memory);
    for (const MemoryVariant& m : e.memory_variants) s += SummaryRow("  " + m.flag, "", "", m.memory);
  }
  return s;
}

std::string Gib(double gib) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f GiB", gib);
  return buf;
}

std::string Block(const TargetSettings& e) {
  std::string s =
      "\n" + std::string(TargetName(e.target)) + ": " + (e.exact ? "exact" : "not exact: " + e.why_not) + "\n";
  if (!e.exact) {
    s += "  closest:  " + (e.approximations.empty() ? std::string("none") : Joined(e.ApproximationSpecs(), "  |  ")) +
         "\n";
    if (e.settings_for.empty()) return s;
    s += "  settings below are for " + e.settings_for + "\n";
  }
  s += "  settings: " + Joined(e.flags, "  ") + "\n";
  for (const std::string& d : e.silent_defaults) s += "  silently: " + d + "\n";
  s += "  example:  " + e.command_example + "\n";
  if (!e.measure_spec.empty()) s += "  measure:  kvaudit --kv \"" + e.measure_spec + "\" (what these settings run)\n";
  s += "  memory:   " + MemoryTotalText(e.memory) + "; " + e.memory.layout + "\n";
  for (const MemoryVariant& m : e.memory_variants) {
    s += "  with " + m.flag + ": " + MemoryTotalText(m.memory) + "; " + m.memory.CellsText() + "\n";
  }
  for (const std::string& n : e.notes) s += "  note:     " + n + "\n";
  s += "  cited at: " + e.applies_to + " (docs/deployment.md)\n";
  return s;
}

}  // namespace

std::string DeployBody(const DeployContext& d, const std::vector<TargetSettings>& targets) {
  std::string s = Summary(d, targets);
  for (const TargetSettings& e : targets) s += Block(e);
  return s;
}

std::string DeployText(const DeployContext& d, const std::vector<TargetSettings>& targets) {
  return Header(d) + DeployBody(d, targets);
}

nlohmann::json DeployJson(const DeployContext& d, const std::vector<TargetSettings>& targets) {
  const ModelConfig& c = *d.config;
  nlohmann::json list = nlohmann::json::array();
  for (const TargetSettings& e : targets) {
    list.push_back({{"engine", std::string(TargetName(e.target))},
                    {"exact", e.exact},
                    {"why_not", e.why_not},
                    {"approximations", e.ApproximationSpecs()},
                    {"settings_for", e.settings_for},
                    {"flags", e.flags},
                    {"command_example", e.command_example},
                    {"measure_spec", e.measure_spec},
                    {"notes", e.notes},
                    {"silent_defaults", e.silent_defaults},
                    {"applies_to", e.applies_to}});
    list.back().update(MemoryJson(e.memory));
    nlohmann::json variants = nlohmann::json::array();
    for (const MemoryVariant& m : e.memory_variants) {
      variants.push_back({{"flag", m.flag}});
      variants.back().update(MemoryJson(m.memory));
    }
    list.back()["memory_variants"] = variants;
  }
  nlohmann::json out = {{"spec", d.spec},
                        {"model",
                         {{"path", d.model},
                          {"architecture", ArchName(c.arch)},
                          {"layers", c.n_layers},
                          {"sliding_layers", c.n_sliding_layers()},
                          {"sliding_window", c.sliding_window},
                          {"kv_heads", c.n_kv_heads},
                          {"head_dim", c.head_dim}}},
                        {"ctx", d.ctx},
                        {"engines", list}};
  // LongRoPE's factors depend on the context the engine is started with (docs/models-phi3.md).
  if (c.rope.is_longrope()) out["rope_at_ctx"] = DescribeLongRope(c, d.ctx);
  return out;
}

std::string MemoryTotalText(const KvMemory& m) {
  const int sliding = m.LayersOf(true);
  if (sliding == 0) return Gib(m.gib_at_target);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const int global = m.LayersOf(false);
  return Gib(m.gib_at_target) + " = " + std::to_string(global) + " global layers " +
         Gib(static_cast<double>(m.BytesOf(false)) / kGiB) + " + " + std::to_string(sliding) + " sliding layers " +
         Gib(static_cast<double>(m.BytesOf(true)) / kGiB) +
         (m.extra_bytes ? " + " + std::to_string(m.extra_bytes) + " B of scales" : "");
}

nlohmann::json MemoryJson(const KvMemory& m) {
  return {{"kv_bytes_per_token", m.bytes_per_token}, {"kv_bytes_at_target", m.bytes_at_target},
          {"kv_gib_at_target", m.gib_at_target},     {"memory_layout", m.layout},
          {"global_layers", m.LayersOf(false)},      {"global_bytes", m.BytesOf(false)},
          {"sliding_layers", m.LayersOf(true)},      {"sliding_bytes", m.BytesOf(true)}};
}

}  // namespace kvaudit
