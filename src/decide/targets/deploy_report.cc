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
  return "kv cache " + d.spec + " for " + d.model + " (" + ArchName(c.arch) + ", " + std::to_string(c.n_layers) +
         " layers, " + std::to_string(c.n_kv_heads) + " KV heads x head_dim " + std::to_string(c.head_dim) + ") at " +
         std::to_string(d.ctx) +
         " tokens\n"
         "Settings only: nothing here is measured. Verify the spec you deploy (kvaudit eval, probe).\n\n";
}

std::string Summary(const DeployContext& d, const std::vector<TargetSettings>& targets) {
  std::string s = Pad("engine", 14) + Pad("exact", 7) + Pad("settings for", 44) + "  KV bytes/token" + "  GiB at " +
                  std::to_string(d.ctx) + "\n";
  for (const TargetSettings& e : targets) {
    s += Pad(std::string(TargetName(e.target)), 14) + Pad(e.exact ? "yes" : "no", 7) +
         Pad(e.settings_for.empty() ? "-" : e.settings_for, 44) +
         Number("%.0f", static_cast<double>(e.memory.bytes_per_token), 16) +
         Number("%.3f", e.memory.gib_at_target, 10) + "\n";
  }
  return s;
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
  s += "  example:  " + e.command_example + "\n";
  if (!e.measure_spec.empty()) s += "  measure:  kvaudit --kv \"" + e.measure_spec + "\" (what these settings run)\n";
  s += "  memory:   " + e.memory.layout + "\n";
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
                    {"applies_to", e.applies_to},
                    {"kv_bytes_per_token", e.memory.bytes_per_token},
                    {"kv_bytes_at_target", e.memory.bytes_at_target},
                    {"kv_gib_at_target", e.memory.gib_at_target},
                    {"memory_layout", e.memory.layout}});
  }
  return {{"spec", d.spec},
          {"model",
           {{"path", d.model},
            {"architecture", ArchName(c.arch)},
            {"layers", c.n_layers},
            {"kv_heads", c.n_kv_heads},
            {"head_dim", c.head_dim}}},
          {"ctx", d.ctx},
          {"engines", list}};
}

}  // namespace kvaudit
