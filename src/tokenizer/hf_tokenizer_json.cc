// Tokenizer::FromHfDir / FromHfJsonText: Hugging Face tokenizer.json (+ tokenizer_config.json).
// Supported: model.type "BPE" with a ByteLevel pre-tokenizer or decoder (GPT-2, Llama-3, Qwen2,
// the bundled model); pre_tokenizer Sequence / Split(Isolated, Regex|String) / ByteLevel / Digits.
// Everything else is refused with an error naming the file, never silently approximated.
// nlohmann::json is used without exceptions: parse(..., allow_exceptions=false) and a type check
// before every get<>().
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/bpe_byte_level.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

using nlohmann::json;

constexpr int64_t kMaxVocab = 1 << 21;  // 2M ids: 8x the largest real vocabulary; bounds fuzzed input

const json* Member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string StringMember(const json& obj, const char* key, const std::string& fallback = "") {
  const json* v = Member(obj, key);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

bool BoolMember(const json& obj, const char* key, bool fallback) {
  const json* v = Member(obj, key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

// A token named in tokenizer_config.json: "text" or {"content": "text", ...}.
std::string TokenText(const json* v) {
  if (v == nullptr) return "";
  if (v->is_string()) return v->get<std::string>();
  return StringMember(*v, "content");
}

std::string EscapeRegexLiteral(const std::string& s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

class HfParser {
 public:
  explicit HfParser(std::string label) : label_(std::move(label)) {}

  Error Fail(const std::string& what) const {
    return BadInput(label_ + ": " + what + "; hint: expected a Hugging Face byte-level BPE tokenizer.json");
  }

  Status ParseVocab(const json& model, Vocab* vocab) const {
    const json* v = Member(model, "vocab");
    if (v == nullptr || !v->is_object()) return Fail("missing model.vocab object");
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= kMaxVocab) {
        return Fail("model.vocab['" + it.key() + "'] is not a token id");
      }
      const auto id = static_cast<size_t>(it.value().get<int64_t>());
      if (id >= vocab->tokens.size()) vocab->tokens.resize(id + 1);
      if (!vocab->tokens[id].empty()) return Fail("model.vocab assigns id " + std::to_string(id) + " twice");
      vocab->tokens[id] = it.key();
    }
    if (vocab->tokens.empty()) return Fail("model.vocab is empty");
    return Status::Ok();
  }

  Status ParseAddedTokens(const json& root, Vocab* vocab) const {
    vocab->attrs.assign(vocab->tokens.size(), kAttrNormal);
    const json* added = Member(root, "added_tokens");
    if (added == nullptr || added->is_null()) return Status::Ok();
    if (!added->is_array()) return Fail("added_tokens is not an array");
    for (const json& t : *added) {
      const json* id_v = Member(t, "id");
      const json* content = Member(t, "content");
      if (!id_v || !id_v->is_number_integer() || !content || !content->is_string() || id_v->get<int64_t>() < 0 ||
          id_v->get<int64_t>() >= kMaxVocab) {
        return Fail("an added_tokens entry lacks an integer id or a content string");
      }
      const auto id = static_cast<size_t>(id_v->get<int64_t>());
      if (id >= vocab->tokens.size()) {
        vocab->tokens.resize(id + 1);
        vocab->attrs.resize(id + 1, kAttrUnused);  // ids between vocab and added tokens are holes
      }
      vocab->tokens[id] = content->get<std::string>();
      uint8_t attr = BoolMember(t, "special", false) ? kAttrControl : kAttrUserDefined;
      if (BoolMember(t, "lstrip", false)) attr |= kAttrLstrip;
      if (BoolMember(t, "rstrip", false)) attr |= kAttrRstrip;
      vocab->attrs[id] = attr;
    }
    for (size_t id = 0; id < vocab->tokens.size(); ++id) {
      if (vocab->tokens[id].empty()) vocab->attrs[id] = kAttrUnused;
    }
    return Status::Ok();
  }

  Expected<std::vector<std::pair<std::string, std::string>>> ParseMerges(const json& model) const {
    std::vector<std::pair<std::string, std::string>> pairs;
    const json* m = Member(model, "merges");
    if (m == nullptr || !m->is_array()) return Fail("missing model.merges array");
    pairs.reserve(m->size());
    for (const json& e : *m) {
      if (e.is_string()) {  // "a b" (tokenizers < 0.20)
        const std::string s = e.get<std::string>();
        const size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) return Fail("merge '" + s + "' is not two tokens separated by a space");
        pairs.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
        pairs.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        return Fail("model.merges holds an entry that is neither \"a b\" nor [a, b]");
      }
    }
    return pairs;
  }

  // HF pre_tokenizer node -> regex stages. byte_level is set when a ByteLevel stage is seen.
  Status ParsePreTokenizer(const json& node, PreTokenizer* pt, bool* byte_level, int depth) const {
    if (node.is_null()) return Status::Ok();
    if (depth > 8) return Fail("pre_tokenizer nesting is too deep");
    const std::string type = StringMember(node, "type");
    if (type == "Sequence") {
      const json* list = Member(node, "pretokenizers");
      if (!list || !list->is_array()) return Fail("pre_tokenizer Sequence lacks a pretokenizers array");
      for (const json& child : *list) KV_RETURN_IF_ERROR(ParsePreTokenizer(child, pt, byte_level, depth + 1));
      return Status::Ok();
    }
    if (type == "Split") {
      const json* pattern = Member(node, "pattern");
      const std::string behavior = StringMember(node, "behavior", "Isolated");
      if (behavior != "Isolated" || BoolMember(node, "invert", false)) {
        return Fail("pre_tokenizer Split with behavior '" + behavior + "' or invert is not supported");
      }
      std::string regex;
      if (pattern && Member(*pattern, "Regex") && Member(*pattern, "Regex")->is_string()) {
        regex = StringMember(*pattern, "Regex");
      } else if (pattern && Member(*pattern, "String") && Member(*pattern, "String")->is_string()) {
        regex = EscapeRegexLiteral(StringMember(*pattern, "String"));
      } else {
        return Fail("pre_tokenizer Split lacks a Regex or String pattern");
      }
      return Annotate(pt->AddRegex(regex));
    }
    if (type == "ByteLevel") {
      *byte_level = true;
      if (BoolMember(node, "add_prefix_space", false)) {
        // HF prefixes every piece present when ByteLevel runs; we support it only as the first
        // stage, where the pieces are the text fragments between special tokens.
        if (pt->num_stages() > 0) return Fail("ByteLevel add_prefix_space after a Split is not supported");
        pt->set_add_prefix_space(true);
      }
      if (BoolMember(node, "use_regex", true)) return Annotate(pt->AddRegex(kGpt2Pattern));
      return Status::Ok();
    }
    if (type == "Digits") {
      return Annotate(pt->AddRegex(BoolMember(node, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)"));
    }
    return Fail("pre_tokenizer type '" + type + "' is not supported");
  }

  // post_processor TemplateProcessing: a SpecialToken before $A means "prepend this token".
  std::string TemplateBos(const json& node, int depth = 0) const {
    const std::string type = StringMember(node, "type");
    if (type == "Sequence" && depth < 8) {
      const json* list = Member(node, "processors");
      if (list && list->is_array()) {
        for (const json& child : *list) {
          if (std::string bos = TemplateBos(child, depth + 1); !bos.empty()) return bos;
        }
      }
      return "";
    }
    if (type != "TemplateProcessing") return "";
    const json* single = Member(node, "single");
    if (!single || !single->is_array() || single->empty()) return "";
    const json* special = Member((*single)[0], "SpecialToken");
    return special ? StringMember(*special, "id") : "";
  }

  Status Annotate(Status s) const {
    if (s.ok()) return s;
    return Fail(s.error().message);
  }

 private:
  std::string label_;
};

Expected<std::unique_ptr<Tokenizer>> Build(std::string_view tokenizer_json, std::string_view config_json,
                                           const std::string& label, const std::string& config_label) {
  HfParser p(label);
  const json root = json::parse(tokenizer_json.begin(), tokenizer_json.end(), nullptr, false);
  if (root.is_discarded() || !root.is_object()) return p.Fail("not a valid JSON object");
  const json* model = Member(root, "model");
  if (model == nullptr || !model->is_object()) return p.Fail("missing model object");
  const std::string type = StringMember(*model, "type", "BPE");
  if (type != "BPE") return p.Fail("model.type '" + type + "' is not supported (only BPE)");

  Vocab vocab;
  KV_RETURN_IF_ERROR(p.ParseVocab(*model, &vocab));
  KV_RETURN_IF_ERROR(p.ParseAddedTokens(root, &vocab));
  vocab.IndexTokens();
  KV_ASSIGN_OR_RETURN(auto pairs, p.ParseMerges(*model));
  auto merges = ResolveMerges(vocab, pairs, /*strict=*/true);
  if (!merges) return p.Fail(merges.error().message);

  const json* normalizer = Member(root, "normalizer");
  if (normalizer && !normalizer->is_null()) {
    // NFC is accepted as a no-op: the byte-level vocabularies that use it (Qwen2) are applied to
    // text that is NFC already in practice. Anything else would change the ids silently.
    const std::string ntype = StringMember(*normalizer, "type");
    if (ntype != "NFC") return p.Fail("normalizer type '" + ntype + "' is not supported");
  }
  PreTokenizer pretok;
  bool byte_level = false;
  if (const json* pre = Member(root, "pre_tokenizer")) {
    KV_RETURN_IF_ERROR(p.ParsePreTokenizer(*pre, &pretok, &byte_level, 0));
  }
  if (const json* dec = Member(root, "decoder"); dec && StringMember(*dec, "type") == "ByteLevel") {
    byte_level = true;
  }
  if (!byte_level) return p.Fail("BPE without a ByteLevel pre-tokenizer or decoder is not supported");

  // BOS: tokenizer_config.json (add_bos_token, bos_token) or a TemplateProcessing post-processor
  // that puts a special token before the text; either one turns it on.
  json config = json::object();
  if (!config_json.empty()) {
    config = json::parse(config_json.begin(), config_json.end(), nullptr, false);
    if (config.is_discarded() || !config.is_object()) {
      return BadInput(config_label + ": not a valid JSON object; hint: fix or remove tokenizer_config.json");
    }
  }
  std::string template_bos;
  if (const json* post = Member(root, "post_processor")) template_bos = p.TemplateBos(*post);
  std::string bos_text = TokenText(Member(config, "bos_token"));
  if (bos_text.empty()) bos_text = template_bos;
  const std::string eos_text = TokenText(Member(config, "eos_token"));
  vocab.add_bos = BoolMember(config, "add_bos_token", false) || !template_bos.empty();
  if (!bos_text.empty()) {
    vocab.bos = vocab.Find(bos_text);
    if (vocab.bos < 0) return p.Fail("bos token '" + bos_text + "' is not in the vocabulary");
  }
  if (!eos_text.empty()) vocab.eos = vocab.Find(eos_text);
  if (vocab.add_bos && vocab.bos < 0) return p.Fail("a BOS token is to be added but none is named");

  return std::unique_ptr<Tokenizer>(std::make_unique<ByteLevelBpeTokenizer>(
      std::move(vocab), merges.value(), std::move(pretok), BoolMember(*model, "ignore_merges", false)));
}

bool ReadFile(const std::filesystem::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = std::move(ss).str();
  return !in.bad();
}

}  // namespace

Expected<std::unique_ptr<Tokenizer>> Tokenizer::FromHfJsonText(std::string_view tokenizer_json,
                                                               std::string_view config_json, const std::string& label) {
  return Build(tokenizer_json, config_json, label, label + " (tokenizer_config.json)");
}

Expected<std::unique_ptr<Tokenizer>> Tokenizer::FromHfDir(const std::string& dir) {
  const std::filesystem::path json_path = std::filesystem::path(dir) / "tokenizer.json";
  const std::filesystem::path config_path = std::filesystem::path(dir) / "tokenizer_config.json";
  std::string text;
  if (!ReadFile(json_path, &text)) {
    return BadInput(json_path.string() + ": cannot read; hint: --model must be a directory with tokenizer.json");
  }
  std::string config;
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec) && !ReadFile(config_path, &config)) {
    return BadInput(config_path.string() + ": cannot read");
  }
  return Build(text, config, json_path.string(), config_path.string());
}

}  // namespace kvaudit
