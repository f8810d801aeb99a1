#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>

namespace kvaudit {

uint8_t AttrFromGgufTokenType(int64_t type) {
  switch (type) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return kAttrNormal;  // 0 (undefined) and unknown values: treat as text
  }
}

int ParseByteToken(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  int v = 0;
  for (char c : s.substr(3, 2)) {
    const int d = (c >= '0' && c <= '9')   ? c - '0'
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                           : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

void Vocab::IndexTokens() {
  ids.clear();
  ids.reserve(tokens.size());
  for (int32_t i = 0; i < size(); ++i) {
    if (!tokens[i].empty()) ids.emplace(tokens[i], i);
  }
}

void Vocab::Digest(const std::function<void(const void*, size_t)>& add) const {
  const uint64_t n = tokens.size();
  add(&n, sizeof(n));
  for (const std::string& t : tokens) {
    const uint64_t len = t.size();  // length-prefixed: "ab","c" differs from "a","bc"
    add(&len, sizeof(len));
    add(t.data(), t.size());
  }
  add(attrs.data(), attrs.size());
  const int32_t ids3[] = {bos, eos, unk, add_bos ? 1 : 0};
  add(ids3, sizeof(ids3));
}

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab) : vocab_(&vocab) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if ((vocab.attrs[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) && !vocab.tokens[id].empty()) {
      by_length_.push_back(id);
    }
  }
  std::stable_sort(by_length_.begin(), by_length_.end(),
                   [&](int32_t a, int32_t b) { return vocab.tokens[a].size() > vocab.tokens[b].size(); });
}

std::vector<Fragment> SpecialTokenSplitter::Split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back(Fragment{-1, text});
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  for (int32_t id : by_length_) {
    const uint8_t attr = vocab_->attrs[id];
    if (!parse_special && vocab_->IsSpecial(id)) continue;
    const std::string& tok = vocab_->tokens[id];
    // Cheap pre-check: most special tokens never occur in the text.
    if (text.find(tok) == std::string_view::npos) continue;
    std::vector<Fragment> next;
    next.reserve(frags.size() + 2);
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      while (!rest.empty()) {
        const size_t at = rest.find(tok);
        if (at == std::string_view::npos) {
          next.push_back(Fragment{-1, rest});
          break;
        }
        std::string_view left = rest.substr(0, at);
        if (attr & kAttrLstrip) {
          while (!left.empty() && is_space(left.back())) left.remove_suffix(1);
        }
        if (!left.empty()) next.push_back(Fragment{-1, left});
        next.push_back(Fragment{id, {}});
        rest = rest.substr(at + tok.size());
        if (attr & kAttrRstrip) {
          while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
        }
      }
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace kvaudit
