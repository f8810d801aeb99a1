#include "eval/resume_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "model/model.h"

namespace kvaudit {
namespace {

constexpr const char* kHeaderKey = "kvaudit_eval_progress";

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

uint64_t HashBytes(const void* data, size_t n, uint64_t seed) {
  // FNV-1a over 8-byte words with a final avalanche: fast enough to hash every weight (~60 MB for
  // the bundled model in tens of milliseconds).
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ 0xcbf29ce484222325ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

uint64_t HashModel(const Model& model) {
  const ModelConfig& c = model.config();
  const int64_t numbers[] = {static_cast<int64_t>(c.arch), c.n_layers, c.d_model, c.n_heads, c.n_kv_heads,
                             c.head_dim, c.d_ff, c.vocab_size, c.max_ctx, c.attn_qkv_bias, c.attn_o_bias,
                             c.qk_norm, c.tied_embeddings, c.sliding_window, c.bos_id, c.eos_id};
  uint64_t h = HashBytes(numbers, sizeof(numbers), 1);
  h = HashBytes(&c.rms_eps, sizeof(c.rms_eps), h);
  const std::vector<float> inv_freq = RopeInvFreq(c.rope, c.head_dim);  // [head_dim/2]
  h = HashBytes(inv_freq.data(), inv_freq.size() * sizeof(float), h);
  const ModelWeights& w = model.weights();
  // Weight bytes as held in memory (bf16/f16 kept as stored, the rest f32), plus the dtype, so a
  // checkpoint re-saved with other dtypes but equal values still matches only if equal as loaded.
  auto add = [&h](const void* data, uint64_t bytes, int tag) {
    h = HashBytes(&tag, sizeof(tag), h);
    h = HashBytes(data, bytes, h);
  };
  auto buf = [&add](const AlignedBuffer& b) { add(b.data(), b.bytes(), -1); };
  auto mat = [&add](const WeightMatrix& m) { add(m.view().data, m.bytes(), static_cast<int>(m.type())); };
  mat(w.embed);
  buf(w.final_norm);
  mat(w.lm_head);
  for (const LayerWeights& l : w.layers) {
    buf(l.attn_norm), mat(l.wqkv), buf(l.bqkv), buf(l.q_norm), buf(l.k_norm), mat(l.wo), buf(l.bo);
    buf(l.ffn_norm), mat(l.w_gate_up), mat(l.w_down);
  }
  return h;
}

uint64_t HashWindows(const std::vector<std::vector<int32_t>>& windows) {
  uint64_t h = HashBytes(nullptr, 0, windows.size());
  for (const auto& w : windows) {
    const uint64_t n = w.size();
    h = HashBytes(&n, sizeof(n), h);  // window boundaries matter, not just the concatenation
    h = HashBytes(w.data(), w.size() * sizeof(int32_t), h);
  }
  return h;
}

std::string HexHash(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

nlohmann::json WindowToJson(const WindowRecord& rec) {
  nlohmann::json j;
  j["window"] = rec.window;
  j["first_pos"] = rec.first_pos;
  j["tokens"] = rec.tokens;
  j["nll_base"] = rec.nll_base;
  j["configs"] = nlohmann::json::array();
  for (const WindowRecord::Config& c : rec.configs) {
    j["configs"].push_back({{"kld", c.kld}, {"nll", c.nll}, {"dp", c.dp},
                            {"top1", BitString(c.top1)}, {"top5_drop", BitString(c.top5_drop)}});
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

Status ProgressLog::Append(const WindowRecord& rec) { return journal_->Append(WindowToJson(rec)); }

Expected<std::unique_ptr<ProgressLog>> ProgressLog::Open(const std::string& path, const nlohmann::json& fingerprint,
                                                         size_t n_configs, size_t n_windows,
                                                         std::vector<WindowRecord>* done, size_t attn_cells) {
  done->clear();
  std::vector<nlohmann::json> lines;
  KV_ASSIGN_OR_RETURN(std::unique_ptr<JsonlJournal> journal,
                      JsonlJournal::Open(path, kHeaderKey, fingerprint, "window", &lines));
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
  return std::unique_ptr<ProgressLog>(new ProgressLog(std::move(journal)));
}

}  // namespace kvaudit
