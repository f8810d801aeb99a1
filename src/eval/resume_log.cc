#include "eval/resume_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "run/fingerprint.h"

namespace kvaudit {
namespace {

std::string BitString(const std::vector<uint8_t>& v) {
  std::string s(v.size(), '0');
  for (size_t i = 0; i < v.size(); ++i) s[i] = v[i] ? '1' : '0';
  return s;
}

bool ParseBits(const nlohmann::json& j, size_t n, std::vector<uint8_t>* out) {
  if (!j.is_string()) return false;
  const std::string& s = j.get_ref<const std::string&>();
  if (s.size() != n) return false;
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (s[i] != '0' && s[i] != '1') return false;
    (*out)[i] = s[i] == '1';
  }
  return true;
}

template <class T>
bool ParseArray(const nlohmann::json& j, const char* key, size_t n, std::vector<T>* out) {
  if (!j.contains(key) || !j[key].is_array() || j[key].size() != n) return false;
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const nlohmann::json& v = j[key][i];
    if (!v.is_number()) return false;
    (*out)[i] = v.get<T>();
  }
  return true;
}

}  // namespace

nlohmann::json WindowToJson(const WindowRecord& rec) {
  nlohmann::json j;
  j["window"] = rec.window;
  j["first_pos"] = rec.first_pos;
  j["tokens"] = rec.tokens;
  j["nll_base"] = rec.nll_base;
  j["configs"] = nlohmann::json::array();
  for (const WindowRecord::Config& c : rec.configs) {
    j["configs"].push_back({{"kld", c.kld},
                            {"nll", c.nll},
                            {"dp", c.dp},
                            {"top1", BitString(c.top1)},
                            {"top5_drop", BitString(c.top5_drop)}});
  }
  if (!rec.attention.empty()) {
    j["attention"] = nlohmann::json::array();
    for (const std::vector<AttnCell>& cells : rec.attention) {
      nlohmann::json jc = nlohmann::json::array();
      for (size_t i = 0; i < cells.size(); ++i) {
        const AttnCell& a = cells[i];
        if (a.queries == 0) continue;
        jc.push_back({i, a.k_err2, a.k_ref2, a.v_err2, a.v_ref2, a.out_err2, a.out_ref2, a.kl, a.tv, a.sink,
                      a.sink_moved, a.queries});
      }
      j["attention"].push_back(std::move(jc));
    }
  }
  return j;
}

namespace {

bool ParseAttention(const nlohmann::json& j, size_t n_configs, size_t attn_cells, WindowRecord* rec) {
  if (attn_cells == 0) return !j.contains("attention");
  if (!j.contains("attention") || !j["attention"].is_array() || j["attention"].size() != n_configs) return false;
  rec->attention.assign(n_configs, std::vector<AttnCell>(attn_cells));
  for (size_t c = 0; c < n_configs; ++c) {
    const nlohmann::json& jc = j["attention"][c];
    if (!jc.is_array()) return false;
    for (const nlohmann::json& e : jc) {
      if (!e.is_array() || e.size() != 12 || !e[0].is_number_unsigned() || !e[11].is_number_integer()) return false;
      for (size_t k = 1; k < 11; ++k) {
        if (!e[k].is_number()) return false;
      }
      const size_t i = e[0].get<size_t>();
      if (i >= attn_cells) return false;
      AttnCell& a = rec->attention[c][i];
      a.k_err2 = e[1].get<double>(), a.k_ref2 = e[2].get<double>(), a.v_err2 = e[3].get<double>();
      a.v_ref2 = e[4].get<double>(), a.out_err2 = e[5].get<double>(), a.out_ref2 = e[6].get<double>();
      a.kl = e[7].get<double>(), a.tv = e[8].get<double>(), a.sink = e[9].get<double>();
      a.sink_moved = e[10].get<double>(), a.queries = e[11].get<int64_t>();
      if (a.queries <= 0) return false;
    }
  }
  return true;
}

}  // namespace

Expected<WindowRecord> WindowFromJson(const nlohmann::json& j, size_t n_configs, size_t attn_cells) {
  const Error bad = BadInput("malformed window record");
  if (!j.is_object() || !j.contains("window") || !j["window"].is_number_integer() || !j.contains("first_pos") ||
      !j["first_pos"].is_number_integer() || !j.contains("tokens") || !j["tokens"].is_array()) {
    return bad;
  }
  WindowRecord rec;
  rec.window = j["window"].get<int>();
  rec.first_pos = j["first_pos"].get<int>();
  const size_t n = j["tokens"].size();
  if (rec.window < 0 || rec.first_pos < 0 || !ParseArray(j, "tokens", n, &rec.tokens) ||
      !ParseArray(j, "nll_base", n, &rec.nll_base)) {
    return bad;
  }
  if (!j.contains("configs") || !j["configs"].is_array() || j["configs"].size() != n_configs) return bad;
  rec.configs.resize(n_configs);
  for (size_t c = 0; c < n_configs; ++c) {
    const nlohmann::json& jc = j["configs"][c];
    WindowRecord::Config& out = rec.configs[c];
    if (!jc.is_object() || !ParseArray(jc, "kld", n, &out.kld) || !ParseArray(jc, "nll", n, &out.nll) ||
        !ParseArray(jc, "dp", n, &out.dp) || !jc.contains("top1") || !ParseBits(jc["top1"], n, &out.top1) ||
        !jc.contains("top5_drop") || !ParseBits(jc["top5_drop"], n, &out.top5_drop)) {
      return bad;
    }
  }
  if (!ParseAttention(j, n_configs, attn_cells, &rec)) return bad;
  return rec;
}

Status WindowsFromJournal(const std::vector<nlohmann::json>& lines, const std::string& path, size_t n_configs,
                          size_t n_windows, size_t attn_cells, std::vector<WindowRecord>* done) {
  done->clear();
  std::map<int, WindowRecord> by_window;  // ascending, each window once
  for (size_t i = 0; i < lines.size(); ++i) {
    auto rec = WindowFromJson(lines[i], n_configs, attn_cells);
    if (!rec) {
      return BadInput(path + ":" + std::to_string(i + 2) + ": damaged window record" + JsonlJournal::Hint("window"));
    }
    // Windows past n_windows belong to a run with a larger --windows over the same data: kept
    // in the file, not used now.
    if (static_cast<size_t>(rec->window) < n_windows) by_window[rec->window] = std::move(*rec);
  }
  for (auto& [w, rec] : by_window) done->push_back(std::move(rec));
  return Status::Ok();
}

Status ReadProgressLog(const std::string& path, const nlohmann::json& fingerprint, size_t n_configs, size_t n_windows,
                       std::vector<WindowRecord>* done, size_t attn_cells) {
  done->clear();
  std::vector<nlohmann::json> lines;
  KV_RETURN_IF_ERROR(JsonlJournal::Read(path, kProgressKind, fingerprint, "window", &lines));
  return WindowsFromJournal(lines, path, n_configs, n_windows, attn_cells, done);
}

}  // namespace kvaudit
