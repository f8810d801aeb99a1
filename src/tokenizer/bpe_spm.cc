#include "tokenizer/bpe_spm.h"

#include <algorithm>
#include <cstdio>

#include "tokenizer/utf8.h"

namespace kvaudit {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁" U+2581

std::string EscapeSpaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out.append(kSpace);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string UnescapeSpaces(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpace.size(), kSpace) == 0) {
      out.push_back(' ');
      i += kSpace.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab, std::vector<float> scores, bool add_space_prefix)
    : vocab_(std::move(vocab)), specials_(vocab_), scores_(std::move(scores)), add_space_prefix_(add_space_prefix) {
  scores_.resize(vocab_.tokens.size(), 0.0f);
  for (int b = 0; b < 256; ++b) {
    // llama.cpp byte_to_token: "<0xNN>", else the byte itself as a one-character token.
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    int32_t id = vocab_.Find(hex);
    if (id < 0) id = vocab_.Find(std::string(1, static_cast<char>(b)));
    byte_ids_[b] = id >= 0 ? id : vocab_.unk;
  }
  pieces_.resize(vocab_.tokens.size());
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const uint8_t attr = vocab_.attrs[id];
    if (attr & (kAttrControl | kAttrUnknown | kAttrUnused)) continue;
    if (attr & kAttrUserDefined) {
      pieces_[id] = vocab_.tokens[id];
    } else if (attr & kAttrByte) {
      const int b = ParseByteToken(vocab_.tokens[id]);
      if (b >= 0) pieces_[id] = std::string(1, static_cast<char>(b));
    } else {
      pieces_[id] = UnescapeSpaces(vocab_.tokens[id]);
    }
  }
}

void SpmTokenizer::AppendBytes(std::string_view chars, std::vector<int32_t>* out) const {
  for (char c : chars) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id >= 0) out->push_back(id);
  }
}

void SpmTokenizer::EncodeText(const std::string& text, std::vector<int32_t>* out) const {
  struct Symbol {
    int32_t prev;
    int32_t next;
    size_t offset;
    size_t n;  // bytes; 0 once merged into the left neighbour
  };
  struct Bigram {
    int32_t left;
    int32_t right;
    float score;
    size_t size;
    // Highest score first, then the leftmost (llama.cpp llm_bigram_spm::comparator).
    bool operator<(const Bigram& o) const { return score != o.score ? score < o.score : left > o.left; }
  };
  std::vector<Symbol> symbols;
  for (size_t offs = 0; offs < text.size();) {
    const size_t len = std::min<size_t>(Utf8SeqLen(static_cast<uint8_t>(text[offs])), text.size() - offs);
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, offs + len == text.size() ? -1 : index + 1, offs, len});
    offs += len;
  }
  if (symbols.empty()) return;
  std::vector<Bigram> heap;
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const std::string_view joined(text.data() + symbols[left].offset, symbols[left].n + symbols[right].n);
    const int32_t id = vocab_.Find(joined);
    if (id < 0) return;
    heap.push_back({left, right, scores_[id], joined.size()});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    // Stale: one side already merged elsewhere (sizes only grow, so the sum check suffices).
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }
  // Every merged symbol is a token by construction; a lone character that is not one becomes
  // its byte tokens (llama.cpp resegment).
  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece(text.data() + symbols[i].offset, symbols[i].n);
    const int32_t id = vocab_.Find(piece);
    if (id >= 0) {
      out->push_back(id);
    } else {
      AppendBytes(piece, out);
    }
  }
}

std::vector<int32_t> SpmTokenizer::Encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  bool prev_special = true;  // llama.cpp: the first text fragment gets the space prefix too
  for (const Fragment& f : specials_.Split(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    std::string escaped = (add_space_prefix_ && prev_special) ? std::string(kSpace) : std::string();
    escaped += EscapeSpaces(f.text);
    EncodeText(escaped, &out);
    prev_special = false;
  }
  return out;
}

std::string SpmTokenizer::Decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  // llama.cpp strips the prefix space from the first token when there is no BOS; we strip it
  // from the first text token even after a BOS, so Decode(Encode(text, true)) == text.
  bool strip_space = add_space_prefix_;
  for (int32_t id : ids) {
    if (!vocab_.Has(id)) continue;
    if (vocab_.IsSpecial(id)) {
      if (render_special) out += vocab_.tokens[id];
      continue;
    }
    const std::string& piece = pieces_[id];
    if (strip_space && !piece.empty() && piece[0] == ' ') {
      out.append(piece, 1, std::string::npos);
    } else {
      out += piece;
    }
    strip_space = false;
  }
  return out;
}

const std::string& SpmTokenizer::TokenString(int32_t id) const {
  static const std::string kEmpty;
  return vocab_.Has(id) ? vocab_.tokens[id] : kEmpty;
}

}  // namespace kvaudit

namespace kvaudit {

void SpmTokenizer::Digest(const DigestSink& add) const {
  static constexpr char kKind[] = "spm";
  add(kKind, sizeof(kKind));
  vocab_.Digest(add);
  add(scores_.data(), scores_.size() * sizeof(float));  // [n_vocab]
  const uint8_t flags[] = {add_space_prefix_};
  add(flags, sizeof(flags));
}

}  // namespace kvaudit
