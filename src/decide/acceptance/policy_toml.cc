#include "decide/acceptance/policy_toml.h"

// Compiled header-only with TOML_EXCEPTIONS=0 (CMakeLists.txt, kvaudit_toml): toml::parse returns
// a parse_result holding the table or the error with its position, and never throws.
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "base/edit_distance.h"
#include "decide/acceptance/policy_text.h"

namespace kvaudit {
namespace {

constexpr const char* kTopKeys[] = {"extends", "target_context", "inconclusive", "relative_to", "fidelity", "probes"};
constexpr const char* kFidelityKeys[] = {"kld_mean_max",  "kld_p99_max",       "top1_agree_min",
                                         "ppl_ratio_max", "min_bucket_tokens", "range"};
constexpr const char* kRangeKeys[] = {"from", "to", "kld_mean_max", "kld_p99_max", "top1_agree_min", "ppl_ratio_max"};
constexpr const char* kCheckedFamilyKeys[] = {"required", "cache_induced_rate_max", "fail_on_significant",
                                              "baseline_pass_min"};
constexpr const char* kCustomKeys[] = {"required", "cache_induced_rate_max", "fail_on_significant", "baseline_pass_min",
                                       "per_probe"};
constexpr const char* kVarianceKeys[] = {"required", "same_seed_divergence_max"};
constexpr const char* kDriftKeys[] = {"required", "kl_mean_max"};
constexpr const char* kProbesKeys[] = {
    "alpha", "fail_on_significant", "baseline_pass_min", "needle", "exact", "constraint", "custom", "variance",
    "drift"};
constexpr int kMaxContext = 1 << 30;
constexpr const char* kContextHint = "a context length is a whole number of tokens, at least 1, e.g. 4096";
constexpr const char* kTokensHint = "a number of scored tokens, at least 1, e.g. 100";

// The range a number must lie in, and what to tell a user whose number does not.
struct NumberRule {
  double lo, hi;
  bool open;  // both ends excluded (alpha)
  const char* hint;
};
constexpr NumberRule kNats{0, std::numeric_limits<double>::max(), false, "a KL divergence is >= 0 nats, e.g. 0.005"};
constexpr NumberRule kFraction{0, 1, false, "a fraction is between 0 and 1, e.g. 0.98"};
constexpr NumberRule kRatio{1, std::numeric_limits<double>::max(), false,
                            "a perplexity ratio limit is >= 1 (1.005 allows +0.5 % perplexity)"};
constexpr NumberRule kAlpha{0, 1, true, "alpha is a significance level strictly between 0 and 1, e.g. 0.05"};

const NumberRule& RuleOf(FidelityMetric m) {
  switch (m) {
    case FidelityMetric::kKldMean:
    case FidelityMetric::kKldP99: return kNats;
    case FidelityMetric::kTop1Agree: return kFraction;
    case FidelityMetric::kPplRatio: return kRatio;
  }
  return kNats;
}

// One key of a table with the position it was written at.
struct Entry {
  std::string key;
  const toml::node* node;
  toml::source_position pos;
};

// A table's entries in file order: toml++ keeps them sorted by name, and the first problem
// reported should be the first one in the file.
std::vector<Entry> Entries(const toml::table& t) {
  std::vector<Entry> out;
  for (auto&& [k, v] : t) out.push_back({std::string(k.str()), &v, k.source().begin});
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return std::pair(a.pos.line, a.pos.column) < std::pair(b.pos.line, b.pos.column);
  });
  return out;
}

std::string TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date or time";
  }
}

// A number as the file wrote it: shortest round-trip form.
std::string NumberText(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  for (int prec = 1; prec < 17; ++prec) {
    char shorter[32];
    std::snprintf(shorter, sizeof(shorter), "%.*g", prec, x);
    if (std::strtod(shorter, nullptr) == x) return shorter;
  }
  return buf;
}

bool Has(std::span<const char* const> keys, const std::string& key) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; });
}

std::string KeyList(std::span<const char* const> keys) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<ProbeFamily> FamilyByName(const std::string& key) {
  for (size_t f = 0; f < kNumProbeFamilies; ++f) {
    if (Lower(key) == FamilyName(static_cast<ProbeFamily>(f))) return static_cast<ProbeFamily>(f);
  }
  return std::nullopt;
}

class PolicyReader {
 public:
  explicit PolicyReader(const std::string& source) : source_(source) {}
  Expected<AcceptancePolicy> Read(const toml::table& root);

 private:
  std::string Where(toml::source_position p) const {
    return source_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
  }
  Error Fail(const std::string& what, toml::source_position p, const std::string& hint) const {
    return BadInput(what + ", " + Where(p) + "; hint: " + hint);
  }
  Status Unknown(const Entry& e, const std::string& path, std::span<const char* const> valid) const;
  Status Number(const Entry& e, const std::string& path, const NumberRule& rule, std::optional<double>* out) const;
  Status Count(const Entry& e, const std::string& path, const char* hint, std::optional<int>* out) const;
  Status Bool(const Entry& e, const std::string& path, std::optional<bool>* out) const;
  // "fail" or "warn"; `fails`/`warns` say what each does, for the hint.
  Status Disposed(const Entry& e, const std::string& path, const char* fails, const char* warns,
                  std::optional<Disposition>* out) const;
  Expected<const toml::table*> Table(const Entry& e, const std::string& path) const;
  Status Metric(const Entry& e, const std::string& path, FidelityLimits* limits, bool* found) const;
  Status ReadTop(const Entry& e, AcceptancePolicy* p) const;
  Status ReadRelativeTo(const Entry& e, AcceptancePolicy* p) const;
  Status ReadFidelity(const toml::table& t, AcceptancePolicy* p) const;
  Status ReadRanges(const Entry& e, AcceptancePolicy* p) const;
  Expected<FidelityRange> ReadRange(const toml::node& n, const std::string& path) const;
  Status ReadProbes(const toml::table& t, AcceptancePolicy* p) const;
  Status ReadFamily(const Entry& e, ProbeFamily f, FamilyPolicy* out) const;

  std::string source_;
};

Status PolicyReader::Unknown(const Entry& e, const std::string& path, std::span<const char* const> valid) const {
  const char* best = nullptr;
  size_t best_d = 3;  // a likely typo: at most 2 edits away
  for (const char* k : valid) {
    const size_t d = EditDistance(e.key, k);
    if (d < best_d) best_d = d, best = k;
  }
  const std::string hint = best ? std::string("did you mean ") + best + "?" : "the keys here are " + KeyList(valid);
  return Fail("unknown key " + path, e.pos, hint);
}

Status PolicyReader::Number(const Entry& e, const std::string& path, const NumberRule& rule,
                            std::optional<double>* out) const {
  const toml::node& n = *e.node;
  if (!n.is_number()) return Fail(path + " must be a number, not " + TypeName(n), n.source().begin, rule.hint);
  const double x = *n.value<double>();
  if (!std::isfinite(x)) return Fail(path + " must be a finite number", n.source().begin, rule.hint);
  const bool below = rule.open ? x <= rule.lo : x < rule.lo;
  const bool above = rule.open ? x >= rule.hi : x > rule.hi;
  if (below || above) return Fail(path + " = " + NumberText(x) + " is out of range", n.source().begin, rule.hint);
  *out = x;
  return Status::Ok();
}

// A whole number of tokens in [1, 2^30]: context lengths and token counts.
Status PolicyReader::Count(const Entry& e, const std::string& path, const char* hint, std::optional<int>* out) const {
  const toml::node& n = *e.node;
  if (!n.is_integer()) return Fail(path + " must be an integer, not " + TypeName(n), n.source().begin, hint);
  const int64_t v = *n.value<int64_t>();
  if (v < 1 || v > kMaxContext) {
    return Fail(path + " = " + std::to_string(v) + " is out of range", n.source().begin,
                std::string(hint) + " (at most " + std::to_string(kMaxContext) + ")");
  }
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status PolicyReader::Bool(const Entry& e, const std::string& path, std::optional<bool>* out) const {
  const toml::node& n = *e.node;
  if (!n.is_boolean()) {
    return Fail(path + " must be true or false, not " + TypeName(n), n.source().begin, "write " + e.key + " = true");
  }
  *out = *n.value<bool>();
  return Status::Ok();
}

Status PolicyReader::Disposed(const Entry& e, const std::string& path, const char* fails, const char* warns,
                              std::optional<Disposition>* out) const {
  const std::string* s = e.node->is_string() ? &e.node->as_string()->get() : nullptr;
  if (!s || (*s != "fail" && *s != "warn")) {
    return Fail(path + " must be \"fail\" or \"warn\"", e.node->source().begin,
                "write " + e.key + " = \"fail\" (" + fails + ") or \"warn\" (" + warns + ")");
  }
  *out = *s == "fail" ? Disposition::kFail : Disposition::kWarn;
  return Status::Ok();
}

Expected<const toml::table*> PolicyReader::Table(const Entry& e, const std::string& path) const {
  if (const toml::table* t = e.node->as_table()) return t;
  return Fail(path + " must be a table, not " + TypeName(*e.node), e.node->source().begin,
              "write [" + path + "] on a line of its own and its keys below it");
}

// A fidelity threshold key (kld_mean_max, ...) of [fidelity] or a range; *found says it was one.
Status PolicyReader::Metric(const Entry& e, const std::string& path, FidelityLimits* limits, bool* found) const {
  *found = false;
  for (size_t m = 0; m < kNumFidelityMetrics; ++m) {
    const auto metric = static_cast<FidelityMetric>(m);
    if (e.key != Info(metric).key) continue;
    *found = true;
    return Number(e, path, RuleOf(metric), &(*limits)[metric]);
  }
  return Status::Ok();
}

Expected<AcceptancePolicy> PolicyReader::Read(const toml::table& root) {
  AcceptancePolicy p;
  p.name = source_;
  for (const Entry& e : Entries(root)) KV_RETURN_IF_ERROR(ReadTop(e, &p));
  return p;
}

Status PolicyReader::ReadTop(const Entry& e, AcceptancePolicy* p) const {
  if (e.key == "extends") {
    const std::string* s = e.node->is_string() ? &e.node->as_string()->get() : nullptr;
    if (!s)
      return Fail("extends must be a string, not " + TypeName(*e.node), e.node->source().begin,
                  "write extends = \"balanced\"");
    p->extends = *s;
    p->extends_where = Where(e.node->source().begin);
    return Status::Ok();
  }
  if (e.key == "target_context") {
    p->target_context_where = Where(e.node->source().begin);
    return Count(e, "target_context", kContextHint, &p->target_context);
  }
  if (e.key == "inconclusive") {
    return Disposed(e, "inconclusive", "a straddling interval fails the configuration", "it passes with a warning",
                    &p->inconclusive);
  }
  if (e.key == "relative_to") return ReadRelativeTo(e, p);
  if (e.key == "fidelity" || e.key == "probes") {
    KV_ASSIGN_OR_RETURN(const toml::table* t, Table(e, e.key));
    return e.key == "fidelity" ? ReadFidelity(*t, p) : ReadProbes(*t, p);
  }
  return Unknown(e, e.key, kTopKeys);
}

// A --kv spec, kept in its canonical form: the gate finds the reference among the results by it.
Status PolicyReader::ReadRelativeTo(const Entry& e, AcceptancePolicy* p) const {
  constexpr const char* kHint = "write relative_to = \"k=q8_0,v=q8_0\" (a --kv spec, docs/formats.md)";
  const toml::node& n = *e.node;
  if (!n.is_string()) return Fail("relative_to must be a string, not " + TypeName(n), n.source().begin, kHint);
  const Expected<CacheConfig> ref = CacheConfig::Parse(n.as_string()->get(), "relative_to");
  if (!ref.ok()) {  // the spec's own message and hint, with the position between them
    const std::string& m = ref.error().message;
    const size_t hint = m.find("; hint: ");
    if (hint == std::string::npos) return Fail(m, n.source().begin, kHint);
    return Fail(m.substr(0, hint), n.source().begin, m.substr(hint + 8));
  }
  p->relative_to = *ref;
  p->relative_to_where = Where(n.source().begin);
  return Status::Ok();
}

Status PolicyReader::ReadFidelity(const toml::table& t, AcceptancePolicy* p) const {
  for (const Entry& e : Entries(t)) {
    const std::string path = "fidelity." + e.key;
    if (e.key == "range") {
      KV_RETURN_IF_ERROR(ReadRanges(e, p));
      continue;
    }
    if (e.key == "min_bucket_tokens") {
      KV_RETURN_IF_ERROR(Count(e, path, kTokensHint, &p->min_bucket_tokens));
      continue;
    }
    bool found = false;
    KV_RETURN_IF_ERROR(Metric(e, path, &p->fidelity, &found));
    if (!found) return Unknown(e, path, kFidelityKeys);
  }
  return Status::Ok();
}

Status PolicyReader::ReadRanges(const Entry& e, AcceptancePolicy* p) const {
  const toml::array* a = e.node->as_array();
  if (!a) {
    return Fail("fidelity.range must be an array of tables, not " + TypeName(*e.node), e.node->source().begin,
                "write each range as [[fidelity.range]] with from, to and its thresholds below it");
  }
  for (size_t i = 0; i < a->size(); ++i) {
    KV_ASSIGN_OR_RETURN(FidelityRange r, ReadRange(*a->get(i), "fidelity.range[" + std::to_string(i) + "]"));
    p->ranges.push_back(std::move(r));
  }
  return Status::Ok();
}

Expected<FidelityRange> PolicyReader::ReadRange(const toml::node& n, const std::string& path) const {
  const toml::table* t = n.as_table();
  constexpr const char* kHint = "a range is a table: [[fidelity.range]] then from = 1, to = 1024 and its thresholds";
  if (!t) return Fail(path + " must be a table, not " + TypeName(n), n.source().begin, kHint);
  FidelityRange r;
  r.where = Where(n.source().begin);
  std::optional<int> from, to;
  for (const Entry& e : Entries(*t)) {
    const std::string key_path = path + "." + e.key;
    bool found = false;
    if (e.key == "from" || e.key == "to") {
      KV_RETURN_IF_ERROR(Count(e, key_path, kContextHint, e.key == "from" ? &from : &to));
      continue;
    }
    KV_RETURN_IF_ERROR(Metric(e, key_path, &r.limits, &found));
    if (!found) return Unknown(e, key_path, kRangeKeys).error();
  }
  if (!from || !to) return Fail(path + " has no " + (from ? "to" : "from"), n.source().begin, kHint);
  if (*from > *to) {
    return Fail(path + " is reversed (from " + std::to_string(*from) + " > to " + std::to_string(*to) + ")",
                n.source().begin, "from is the shorter context length; both ends are included");
  }
  if (!r.limits.any()) {
    return Fail(path + " sets no threshold", n.source().begin,
                "give at least one of kld_mean_max, kld_p99_max, top1_agree_min, ppl_ratio_max");
  }
  r.from = *from, r.to = *to;
  return r;
}

Status PolicyReader::ReadProbes(const toml::table& t, AcceptancePolicy* p) const {
  std::array<std::string, kNumProbeFamilies> seen;  // the key each family was first given as
  for (const Entry& e : Entries(t)) {
    const std::string path = "probes." + e.key;
    if (e.key == "alpha") {
      KV_RETURN_IF_ERROR(Number(e, path, kAlpha, &p->alpha));
    } else if (e.key == "fail_on_significant") {
      KV_RETURN_IF_ERROR(Bool(e, path, &p->fail_on_significant));
    } else if (e.key == "baseline_pass_min") {
      KV_RETURN_IF_ERROR(Number(e, path, kFraction, &p->baseline_pass_min));
    } else if (const auto f = FamilyByName(e.key)) {
      // Family names are matched without regard to case, so one family can be spelled twice.
      std::string& first = seen[static_cast<size_t>(*f)];
      if (!first.empty()) {
        return Fail(path + " names the family " + FamilyName(*f) + " again (first as " + first + ")", e.pos,
                    "give each family one table");
      }
      first = path + " at " + Where(e.pos);
      FamilyPolicy fp;
      KV_RETURN_IF_ERROR(ReadFamily(e, *f, &fp));
      p->families[static_cast<size_t>(*f)] = std::move(fp);
    } else {
      return Unknown(e, path, kProbesKeys);
    }
  }
  return Status::Ok();
}

Status PolicyReader::ReadFamily(const Entry& fe, ProbeFamily f, FamilyPolicy* out) const {
  const std::string base = "probes." + fe.key;
  KV_ASSIGN_OR_RETURN(const toml::table* t, Table(fe, base));
  out->where = Where(fe.pos);
  const std::span<const char* const> valid = f == ProbeFamily::kVariance ? std::span<const char* const>(kVarianceKeys)
                                             : f == ProbeFamily::kDrift  ? std::span<const char* const>(kDriftKeys)
                                             : f == ProbeFamily::kCustom
                                                 ? std::span<const char* const>(kCustomKeys)
                                                 : std::span<const char* const>(kCheckedFamilyKeys);
  for (const Entry& e : Entries(*t)) {
    const std::string path = base + "." + e.key;
    if (!Has(valid, e.key)) return Unknown(e, path, valid);
    if (e.key == "required") {
      KV_RETURN_IF_ERROR(Bool(e, path, &out->required));
    } else if (e.key == "fail_on_significant") {
      KV_RETURN_IF_ERROR(Bool(e, path, &out->fail_on_significant));
    } else if (e.key == "cache_induced_rate_max") {
      KV_RETURN_IF_ERROR(Number(e, path, kFraction, &out->cache_induced_rate_max));
    } else if (e.key == "baseline_pass_min") {
      KV_RETURN_IF_ERROR(Number(e, path, kFraction, &out->baseline_pass_min));
    } else if (e.key == "same_seed_divergence_max") {
      KV_RETURN_IF_ERROR(Number(e, path, kFraction, &out->same_seed_divergence_max));
    } else if (e.key == "per_probe") {
      KV_RETURN_IF_ERROR(Disposed(e, path, "a custom probe lost under the cache fails it", "it is named as a warning",
                                  &out->per_probe));
    } else {
      KV_RETURN_IF_ERROR(Number(e, path, kNats, &out->kl_mean_max));
    }
  }
  return Status::Ok();
}

// toml++'s descriptions are one line; a stray newline would still break the one-line rule.
std::string OneLine(std::string_view s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '\n', ' ');
  std::replace(out.begin(), out.end(), '\r', ' ');
  return out;
}

}  // namespace

Expected<AcceptancePolicy> ReadPolicyToml(std::string_view text, const std::string& source) {
  KV_ASSIGN_OR_RETURN(const std::string ascii, AsciiPolicyText(text, source));
  toml::parse_result parsed = toml::parse(ascii, source);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    const toml::source_position p = e.source().begin;
    return BadInput("TOML syntax error: " + OneLine(e.description()) + ", " + source + ":" + std::to_string(p.line) +
                    ":" + std::to_string(p.column) + "; hint: the policy is TOML (key = value, [table]); " +
                    "docs/decision.md \"Acceptance policy\" shows the format");
  }
  return PolicyReader(source).Read(parsed.table());
}

}  // namespace kvaudit
