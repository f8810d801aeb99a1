#include "probe/custom.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "base/json_text.h"
#include "base/edit_distance.h"

namespace kvaudit {
namespace {

using nlohmann::json;

constexpr size_t kMaxListedProblems = 50;
constexpr const char* kKeysHint = "keys are id, prompt, expected, contains, regex, json_valid, json_equals, max_tokens";
constexpr const char* kCheckKeys[] = {"expected", "contains", "regex", "json_valid", "json_equals"};
constexpr const char* kAllKeys[] = {"id",    "prompt",     "expected",    "contains",
                                    "regex", "json_valid", "json_equals", "max_tokens"};

// "a string", "an array", ... for messages.
std::string AType(const json& j) {
  const std::string t = j.type_name();
  return (t == "array" || t == "object" ? "an " : "a ") + t;
}

std::string Quoted(const std::string& s) { return JsonText(json(s)); }

// Hint for an unknown key: the closest known key when it is a likely typo, else the key list.
std::string UnknownKeyHint(const std::string& key) {
  const char* best = nullptr;
  size_t best_d = 3;  // at most 2 edits away
  for (const char* k : kAllKeys) {
    const size_t d = EditDistance(key, k);
    if (d < best_d) best_d = d, best = k;
  }
  if (best != nullptr) return std::string("did you mean \"") + best + "\"?";
  return kKeysHint;
}

// The problems of one line (empty when it is a good probe, which then lands in *probe).
std::vector<std::string> ParseLine(const std::string& line, CustomProbe* probe) {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& what, const std::string& hint) {
    problems.push_back(what + "; hint: " + hint);
  };
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    std::string what = e.what();
    const size_t tag_end = what.find("] ");  // drop "[json.exception.parse_error.101] "
    if (what.rfind("[json.", 0) == 0 && tag_end != std::string::npos) what = what.substr(tag_end + 2);
    // One physical line is parsed: its "line 1" would contradict the file line we report.
    if (const size_t at = what.find("at line 1, column "); at != std::string::npos) what.replace(at, 18, "at column ");
    problem("not valid JSON (" + what + ")", "one JSON object per line");
    return problems;
  }
  if (!j.is_object()) {
    problem("a JSON " + std::string(j.type_name()) + ", not an object",
            "each line is {\"id\": ..., \"prompt\": ..., <check>}");
    return problems;
  }
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kAllKeys), std::end(kAllKeys), key) == std::end(kAllKeys)) {
      problem("unknown key " + Quoted(key), UnknownKeyHint(key));
    }
  }
  auto required_string = [&](const char* key, std::string* out) {
    const auto it = j.find(key);
    if (it == j.end()) {
      problem(std::string("no \"") + key + "\"", std::string("every probe needs a string \"") + key + "\"");
    } else if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      problem(std::string("\"") + key + "\" is " + (it->is_string() ? "empty" : AType(*it)),
              std::string("give \"") + key + "\" as a non-empty string");
    } else {
      *out = it->get<std::string>();
    }
  };
  required_string("id", &probe->id);
  required_string("prompt", &probe->prompt);

  if (const auto it = j.find("max_tokens"); it != j.end()) {
    if (!it->is_number_integer()) {
      problem("\"max_tokens\" is " + AType(*it) + (it->is_number() ? " with a fraction" : ""),
              "give a whole number from 1 to " + std::to_string(kMaxProbeMaxTokens));
    } else if (it->is_number_unsigned()
                   ? (it->get<uint64_t>() < 1 || it->get<uint64_t>() > uint64_t{kMaxProbeMaxTokens})
                   : (it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxProbeMaxTokens)) {
      problem("\"max_tokens\" is " + it->dump() + ", outside 1.." + std::to_string(kMaxProbeMaxTokens),
              "give a whole number from 1 to " + std::to_string(kMaxProbeMaxTokens) + " (default " +
                  std::to_string(kDefaultProbeMaxTokens) + ")");
    } else {
      probe->max_tokens = it->get<int>();
    }
  }

  std::vector<std::string> checks;
  for (const char* k : kCheckKeys) {
    if (j.contains(k)) checks.push_back(k);
  }
  if (checks.empty()) {
    problem("no check", "give exactly one of expected, contains, regex, json_valid, json_equals");
    return problems;
  }
  if (checks.size() > 1) {
    std::string list;
    for (size_t i = 0; i < checks.size(); ++i)
      list += (i ? (i + 1 == checks.size() ? " and \"" : ", \"") : "\"") + checks[i] + "\"";
    problem(std::to_string(checks.size()) + " checks " + list, "one check per probe; split it into several probes");
    return problems;
  }
  const std::string& key = checks[0];
  const json& v = j[key];
  ProbeCheck& check = probe->check;
  if (key == "expected" || key == "contains" || key == "regex") {
    if (!v.is_string()) {
      problem("\"" + key + "\" is " + AType(v), "give \"" + key + "\" as a string");
      return problems;
    }
    if (key == "regex") {
      check.kind = ProbeCheck::Kind::kRegex;
      check.pattern = v.get<std::string>();
    } else {
      check.kind = key == "expected" ? ProbeCheck::Kind::kPrefix : ProbeCheck::Kind::kContains;
      check.expected = v.get<std::string>();
    }
  } else if (key == "json_valid") {
    if (!v.is_boolean() || !v.get<bool>()) {
      problem("\"json_valid\" is " + JsonText(v), "write \"json_valid\": true (the only value it takes)");
      return problems;
    }
    check.kind = ProbeCheck::Kind::kJsonValid;
  } else {  // json_equals
    if (!v.is_object()) {
      problem("\"json_equals\" is " + AType(v), "write \"json_equals\": {\"path\": \"a.b[0]\", \"value\": ...}");
      return problems;
    }
    bool ok = true;
    for (const auto& [k, unused] : v.items()) {
      if (k != "path" && k != "value") {
        problem("unknown key " + Quoted(k) + " in \"json_equals\"", "it takes only \"path\" and \"value\"");
        ok = false;
      }
    }
    const auto path = v.find("path");
    if (path == v.end() || !path->is_string()) {
      problem(path == v.end() ? "no \"path\" in \"json_equals\"" : "\"json_equals\".\"path\" is " + AType(*path),
              "give a string path: a.b[0].c, or a JSON pointer /a/b/0/c");
      ok = false;
    }
    if (!v.contains("value")) {
      problem("no \"value\" in \"json_equals\"", "give the JSON value the element must equal");
      ok = false;
    }
    if (!ok) return problems;
    check.kind = ProbeCheck::Kind::kJsonEquals;
    check.json_path = path->get<std::string>();
    check.json_value = v["value"];
  }
  if (const Status st = check.Validate(); !st.ok()) problems.push_back(st.error().message);
  return problems;
}

}  // namespace

Expected<std::vector<CustomProbe>> ParseCustomProbes(std::string_view text, const std::string& label) {
  std::vector<CustomProbe> probes;
  std::vector<std::string> problems;
  std::map<std::string, int> first_line_of_id;
  size_t bad_lines = 0;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 byte order mark
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    CustomProbe probe;
    probe.line = line_no;
    std::vector<std::string> line_problems = ParseLine(line, &probe);
    if (!probe.id.empty()) {
      const auto [it, inserted] = first_line_of_id.emplace(probe.id, line_no);
      if (!inserted) {
        line_problems.push_back("duplicate id " + Quoted(probe.id) + " (first on line " + std::to_string(it->second) +
                                "); hint: give every probe its own id");
      }
    }
    if (line_problems.empty()) {
      probes.push_back(std::move(probe));
      continue;
    }
    ++bad_lines;
    for (const std::string& p : line_problems) problems.push_back(label + ":" + std::to_string(line_no) + ": " + p);
  }
  if (!problems.empty()) {
    std::string message = std::to_string(bad_lines) + " malformed probe line(s) in " + label;
    for (size_t i = 0; i < problems.size() && i < kMaxListedProblems; ++i) message += "\n" + problems[i];
    if (problems.size() > kMaxListedProblems) {
      message += "\n... and " + std::to_string(problems.size() - kMaxListedProblems) + " more problem(s)";
    }
    return BadInput(std::move(message));
  }
  if (probes.empty()) {
    return BadInput(label +
                    ": no probes in the file; hint: one JSON object per line, e.g. "
                    "{\"id\": \"p1\", \"prompt\": \"...\", \"expected\": \"...\"}");
  }
  return probes;
}

Expected<std::vector<CustomProbe>> LoadCustomProbes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput(path + ": cannot open the custom probe file; hint: check the path");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Internal(path + ": read failed");
  return ParseCustomProbes(ss.str(), path);
}

nlohmann::json CheckFields(const CustomProbe& probe) {
  const ProbeCheck& c = probe.check;
  nlohmann::json j = {{"max_tokens", probe.max_tokens}};
  switch (c.kind) {
    case ProbeCheck::Kind::kPrefix: j["expected"] = c.expected; break;
    case ProbeCheck::Kind::kContains: j["contains"] = c.expected; break;
    case ProbeCheck::Kind::kRegex: j["regex"] = c.pattern; break;
    case ProbeCheck::Kind::kJsonValid: j["json_valid"] = true; break;
    case ProbeCheck::Kind::kJsonEquals: j["json_equals"] = {{"path", c.json_path}, {"value", c.json_value}}; break;
    default: j["check"] = c.Describe(); break;  // kinds custom probes do not take
  }
  return j;
}

}  // namespace kvaudit
