#include "tokenizer/bpe_byte_level.h"

#include <algorithm>
#include <tuple>

#include "tokenizer/utf8.h"

namespace kvaudit {
namespace {

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

constexpr int32_t kDead = -2;  // symbol merged into its left neighbour

}  // namespace

Expected<std::vector<BpeMerge>> ResolveMerges(const Vocab& vocab,
                                              const std::vector<std::pair<std::string, std::string>>& pairs,
                                              bool strict) {
  std::vector<BpeMerge> merges;
  merges.reserve(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [a, b] = pairs[i];
    BpeMerge m{vocab.Find(a), vocab.Find(b), vocab.Find(a + b)};
    if (m.left < 0 || m.right < 0 || m.result < 0) {
      if (!strict) continue;
      const std::string& missing = m.left < 0 ? a : m.right < 0 ? b : a + b;
      return BadInput("merge #" + std::to_string(i) + " '" + a + " " + b + "' references token '" + missing +
                      "' that is not in the vocabulary");
    }
    merges.push_back(m);
  }
  return merges;
}

struct ByteLevelBpeTokenizer::Scratch {
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t left_id;
    int32_t right_id;
    int32_t result;
    // priority_queue pops the largest: make the lowest rank, then the leftmost, the largest.
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string mapped;
};

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(Vocab vocab, const std::vector<BpeMerge>& merges,
                                             PreTokenizer pretokenizer, bool ignore_merges)
    : vocab_(std::move(vocab)),
      specials_(vocab_),
      pretokenizer_(std::move(pretokenizer)),
      ignore_merges_(ignore_merges) {
  const ByteLevelTable& table = ByteLevelTable::Get();
  for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab_.Find(table.Encode(static_cast<uint8_t>(b)));
  merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    // The first (lowest-rank) occurrence of a pair wins, as in llama.cpp's bpe_ranks.emplace.
    merges_.emplace(PairKey(merges[r].left, merges[r].right),
                    std::make_pair(static_cast<int32_t>(r), merges[r].result));
  }
  pieces_.resize(vocab_.tokens.size());
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const std::string& tok = vocab_.tokens[id];
    const uint8_t attr = vocab_.attrs[id];
    if (attr & (kAttrControl | kAttrUnknown | kAttrUnused)) continue;  // rendered on demand only
    if (attr & kAttrUserDefined) {
      pieces_[id] = tok;  // added tokens are stored as plain text, not byte-mapped
      continue;
    }
    if (attr & kAttrByte) {
      const int b = ParseByteToken(tok);
      if (b >= 0) pieces_[id] = std::string(1, static_cast<char>(b));
      continue;
    }
    size_t pos = 0;
    while (pos < tok.size()) {
      const size_t start = pos;
      const int32_t cp = NextCodepoint(tok, &pos);
      const int b = cp < 0 ? -1 : table.Decode(static_cast<uint32_t>(cp));
      if (b >= 0) {
        pieces_[id].push_back(static_cast<char>(b));
      } else {
        pieces_[id].append(tok, start, pos - start);  // not a byte stand-in: keep the text
      }
    }
  }
}

void ByteLevelBpeTokenizer::EncodeWord(std::string_view word, Scratch* s, std::vector<int32_t>* out) const {
  if (ignore_merges_ || word.size() == 1) {
    s->mapped.clear();
    ByteLevelTable::Get().EncodeString(word, &s->mapped);
    const int32_t id = vocab_.Find(s->mapped);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  const int32_t n = static_cast<int32_t>(word.size());
  s->symbols.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    s->symbols[i] = {byte_ids_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  s->heap.clear();
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t a = s->symbols[left].id;
    const int32_t b = s->symbols[right].id;
    if (a < 0 || b < 0) return;
    auto it = merges_.find(PairKey(a, b));
    if (it == merges_.end()) return;
    s->heap.push_back({it->second.first, left, right, a, b, it->second.second});
    std::push_heap(s->heap.begin(), s->heap.end());
  };
  for (int32_t i = 0; i + 1 < n; ++i) try_add(i, i + 1);
  while (!s->heap.empty()) {
    std::pop_heap(s->heap.begin(), s->heap.end());
    const Scratch::Candidate c = s->heap.back();
    s->heap.pop_back();
    auto& left = s->symbols[c.left];
    // Stale candidates: either side was merged away or changed since it was queued.
    if (left.id != c.left_id || left.next != c.right || s->symbols[c.right].id != c.right_id) continue;
    auto& right = s->symbols[c.right];
    left.id = c.result;
    left.next = right.next;
    if (right.next >= 0) s->symbols[right.next].prev = c.left;
    right.id = kDead;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }
  // Bytes without a token of their own are dropped, like HF BPE without an unk token.
  for (int32_t i = 0; i != -1; i = s->symbols[i].next) {
    if (s->symbols[i].id >= 0) out->push_back(s->symbols[i].id);
  }
}

std::vector<int32_t> ByteLevelBpeTokenizer::Encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  Scratch scratch;
  std::string prefixed;
  for (const Fragment& f : specials_.Split(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      continue;
    }
    std::string_view t = f.text;
    if (pretokenizer_.add_prefix_space() && t.front() != ' ') {
      prefixed.assign(1, ' ');
      prefixed.append(t.data(), t.size());
      t = prefixed;
    }
    if (pretokenizer_.num_stages() == 0) {
      EncodeWord(t, &scratch, &out);
      continue;
    }
    for (std::string_view piece : pretokenizer_.Split(t)) EncodeWord(piece, &scratch, &out);
  }
  return out;
}

std::string ByteLevelBpeTokenizer::Decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (!vocab_.Has(id)) continue;
    if (vocab_.IsSpecial(id)) {
      if (render_special) out += vocab_.tokens[id];
      continue;
    }
    out += pieces_[id];
  }
  return out;
}

const std::string& ByteLevelBpeTokenizer::TokenString(int32_t id) const {
  static const std::string kEmpty;
  return vocab_.Has(id) ? vocab_.tokens[id] : kEmpty;
}

}  // namespace kvaudit

namespace kvaudit {

void ByteLevelBpeTokenizer::Digest(const DigestSink& add) const {
  static constexpr char kKind[] = "byte-level-bpe";
  add(kKind, sizeof(kKind));
  vocab_.Digest(add);
  // The merges as ranked (the hash map's order is not deterministic): [n_merges] (rank, left<<32|right, result).
  std::vector<std::tuple<int32_t, uint64_t, int32_t>> ranked;
  ranked.reserve(merges_.size());
  for (const auto& [key, rank_result] : merges_) ranked.emplace_back(rank_result.first, key, rank_result.second);
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [rank, key, result] : ranked) {
    add(&rank, sizeof(rank)), add(&key, sizeof(key)), add(&result, sizeof(result));
  }
  for (const std::string& p : pretokenizer_.patterns()) add(p.data(), p.size() + 1);  // with the NUL: boundaries
  const uint8_t flags[] = {pretokenizer_.add_prefix_space(), ignore_merges_};
  add(flags, sizeof(flags));
}

}  // namespace kvaudit
