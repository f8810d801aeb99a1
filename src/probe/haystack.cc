#include "probe/haystack.h"

#include <algorithm>
#include <numeric>

#include "run/text_data.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

std::string Joined(const FillerLine& l) { return l.head + l.value + l.tail; }

// Token index at which each whole line ends inside `ids` (the joint tokenization of the lines'
// text), or -1 where a token straddles the line end (e.g. GPT-2's split regex glues "\n" to the next
// line's indentation). Empty when the per-token texts do not add up to the text (no byte-exact
// single-token decode): then every line is tokenized on its own.
std::vector<int> LineEndTokens(const Tokenizer& tok, const std::vector<FillerLine>& lines,
                               const std::vector<int32_t>& ids) {
  std::vector<size_t> token_end(ids.size());
  size_t off = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    off += tok.Decode(std::span<const int32_t>(&ids[i], 1)).size();
    token_end[i] = off;
  }
  size_t text_size = 0;
  for (const auto& l : lines) text_size += Joined(l).size();
  if (off != text_size) return {};
  std::vector<int> ends(lines.size(), -1);
  size_t line_end = 0, t = 0;
  for (size_t li = 0; li < lines.size(); ++li) {
    line_end += Joined(lines[li]).size();
    while (t < ids.size() && token_end[t] < line_end) ++t;
    if (t < ids.size() && token_end[t] == line_end) ends[li] = static_cast<int>(t + 1);
  }
  return ends;
}

}  // namespace

std::vector<int32_t> EncodePiece(const Tokenizer& tokenizer, std::string_view text) {
  // SentencePiece vocabularies add a dummy-prefix space ("▁") to every encoded text, which would put
  // a space at the start of each piece. There, encode "\n" + text and drop the newline's ids: the
  // piece then reads as it would in the middle of a document.
  const auto nl = tokenizer.Encode("\n", /*add_bos=*/false, /*parse_special=*/false);
  const bool dummy_prefix = nl.size() > 1 && tokenizer.TokenString(nl[0]).rfind("\xE2\x96\x81", 0) == 0;
  if (dummy_prefix && !text.empty()) {
    const auto with_nl = tokenizer.Encode("\n" + std::string(text), false, false);
    if (with_nl.size() > nl.size() && std::equal(nl.begin(), nl.end(), with_nl.begin())) {
      return std::vector<int32_t>(with_nl.begin() + static_cast<std::ptrdiff_t>(nl.size()), with_nl.end());
    }
  }
  return tokenizer.Encode(text, /*add_bos=*/false, /*parse_special=*/false);
}

Expected<Haystack> Haystack::FromDocuments(const std::vector<std::string>& docs) {
  Haystack h;
  bool any_text = false;
  for (const auto& doc : docs) {
    if (doc.empty()) continue;
    if (!h.lines_.empty()) h.lines_.emplace_back();  // blank line between documents
    size_t pos = 0;
    while (pos < doc.size()) {
      size_t nl = doc.find('\n', pos);
      if (nl == std::string::npos) nl = doc.size();
      std::string line = doc.substr(pos, nl - pos);
      std::erase(line, '\r');
      any_text = any_text || line.find_first_not_of(" \t") != std::string::npos;
      h.lines_.push_back(std::move(line));
      pos = nl + 1;
    }
  }
  if (!any_text) return BadInput("probe haystack: no text; hint: pass documents with text (--data)");
  return h;
}

Expected<Haystack> Haystack::Load(const std::string& path) {
  KV_ASSIGN_OR_RETURN(auto docs, LoadDocuments(path));
  return FromDocuments(docs);
}

FillerStream::FillerStream(const Haystack& haystack, const Tokenizer& tokenizer, uint64_t seed, LineFilter keep,
                           LineShape shape)
    : haystack_(haystack), tokenizer_(tokenizer), keep_(std::move(keep)), shape_(std::move(shape)) {
  ProbeRng rng(seed);
  start_ = haystack.line_count() ? rng.Below(haystack.line_count()) : 0;
}

bool FillerStream::NextLine(FillerLine* out) {
  while (visited_ < haystack_.line_count()) {
    const std::string& line = haystack_.line((start_ + visited_) % haystack_.line_count());
    ++visited_;
    if (keep_ && !keep_(line)) continue;
    // Leaving lines out can pile up blank lines; more than two in a row would be filler of its own.
    const bool blank = line.find_first_not_of(" \t") == std::string::npos;
    if (blank && blank_run_ >= 2) continue;
    blank_run_ = blank ? blank_run_ + 1 : 0;
    if (shape_) {
      *out = shape_(line, ordinal_);
    } else {
      *out = FillerLine{"", line, "\n"};
    }
    ++ordinal_;
    return true;
  }
  return false;
}

Expected<std::vector<int32_t>> FillerStream::Take(int n) {
  if (n <= 0) return std::vector<int32_t>{};
  // Read lines until their joint tokenization surely covers n tokens. Code and prose average 3-4
  // characters per token on the tokenizers we know; 6 per token plus a margin rarely needs a second
  // round.
  std::vector<FillerLine> lines = std::move(pending_);
  pending_.clear();
  size_t chars = 0;
  for (const auto& l : lines) chars += Joined(l).size();
  size_t target = 6 * static_cast<size_t>(n) + 256;
  while (true) {
    FillerLine l;
    while (chars < target && NextLine(&l)) {
      chars += Joined(l).size();
      lines.push_back(std::move(l));
    }
    if (chars < target) break;  // the haystack is used up; TakeFrom says whether it suffices
    std::string text;
    for (const auto& x : lines) text += Joined(x);
    if (static_cast<int>(EncodePiece(tokenizer_, text).size()) > n) break;
    target *= 2;
  }
  return TakeFrom(std::move(lines), n);
}

Expected<std::vector<int32_t>> FillerStream::TakeFrom(std::vector<FillerLine> lines, int n) {
  std::string text;
  for (const auto& l : lines) text += Joined(l);
  const std::vector<int32_t> ids = EncodePiece(tokenizer_, text);
  const std::vector<int> ends = LineEndTokens(tokenizer_, lines, ids);
  const std::vector<int32_t> newline = EncodePiece(tokenizer_, "\n");

  // Candidates: the first L lines as jointly tokenized (their ids end at a line end, <= n tokens),
  // longest first; the rest of the n tokens come from the following lines tokenized one by one, the
  // last truncated in its value. A candidate fails when the remainder cannot be made exact.
  std::vector<std::pair<int, int>> candidates = {{0, 0}};  // (whole lines, tokens)
  for (size_t li = 0; li < ends.size(); ++li) {
    if (ends[li] > 0 && ends[li] <= n) candidates.emplace_back(static_cast<int>(li + 1), ends[li]);
  }
  for (auto c = candidates.rbegin(); c != candidates.rend(); ++c) {
    std::vector<int32_t> out(ids.begin(), ids.begin() + c->second);
    int r = n - c->second;
    size_t li = static_cast<size_t>(c->first);
    bool failed = false;
    while (r > 0 && !failed) {
      if (li >= lines.size()) {
        return BadInput("probe haystack too short: " + std::to_string(r) +
                        " more filler tokens needed after using every line; hint: pass more text with --data, or "
                        "smaller --lengths");
      }
      const FillerLine& l = lines[li++];
      const auto whole = EncodePiece(tokenizer_, Joined(l));
      if (static_cast<int>(whole.size()) <= r) {
        out.insert(out.end(), whole.begin(), whole.end());
        r -= static_cast<int>(whole.size());
        continue;
      }
      const auto head = EncodePiece(tokenizer_, l.head);
      const auto value = EncodePiece(tokenizer_, l.value);
      const auto tail = EncodePiece(tokenizer_, l.tail);
      const int fixed = static_cast<int>(head.size() + tail.size());
      if (fixed <= r && r - fixed <= static_cast<int>(value.size())) {
        out.insert(out.end(), head.begin(), head.end());
        out.insert(out.end(), value.begin(), value.begin() + (r - fixed));
        out.insert(out.end(), tail.begin(), tail.end());
        r = 0;
      } else if (fixed > r && newline.size() == 1) {
        // Too few tokens left for even an empty shaped line: blank lines (valid inside JSON too).
        out.insert(out.end(), r, newline[0]);
        r = 0;
      } else if (fixed <= r) {
        // The pieces alone are shorter than the line tokenized whole: take them whole.
        out.insert(out.end(), head.begin(), head.end());
        out.insert(out.end(), value.begin(), value.end());
        out.insert(out.end(), tail.begin(), tail.end());
        r -= fixed + static_cast<int>(value.size());
      } else {
        failed = true;
      }
    }
    if (failed) continue;
    pending_.assign(std::make_move_iterator(lines.begin() + static_cast<std::ptrdiff_t>(li)),
                    std::make_move_iterator(lines.end()));
    return out;
  }
  return Internal("probe filler: cannot make exactly " + std::to_string(n) +
                  " tokens from the haystack (a newline takes several tokens in this vocabulary)");
}

Status PlacePrompt(const Tokenizer& tokenizer, FillerStream& filler, const PromptWrap& wrap, int depth,
                   const ProbeLayout& layout, ProbeRng& rng, ProbeInstance& p) {
  auto assembled = AssemblePrompt(tokenizer, filler, wrap, p.length, depth, layout, rng);
  if (!assembled) return Error{assembled.error().code, p.id + ": " + assembled.error().message};
  p.prompt = std::move(assembled->prompt);
  p.fact_token = assembled->fact_token;
  p.fact_tokens = static_cast<int>(layout.fact.size());
  p.haystack_begin = assembled->haystack_begin;
  p.haystack_end = assembled->haystack_end;
  return Status::Ok();
}

Expected<AssembledPrompt> AssemblePrompt(const Tokenizer& tokenizer, FillerStream& filler, const PromptWrap& wrap,
                                         int length, int depth, const ProbeLayout& layout, ProbeRng& rng) {
  if (depth < 0 || depth > 100) {
    return BadInput("probe depth " + std::to_string(depth) + "% is out of range; hint: depths are 0..100");
  }
  if (length < kMinProbeLength) {
    return BadInput("probe length " + std::to_string(length) + " is below the minimum of " +
                    std::to_string(kMinProbeLength) + " tokens; hint: use --lengths of at least " +
                    std::to_string(kMinProbeLength));
  }
  // The wrap sees a sentinel body; the text around it is tokenized on its own (special tokens of a
  // chat template are parsed), so the body's ids do not depend on the template.
  static const std::string kSentinel = "\x1dKVAUDIT_PROBE_BODY\x1d";
  std::string head, tail = layout.answer_prefix;
  if (wrap) {
    const std::string text = wrap(kSentinel, layout.question, layout.answer_prefix);
    const size_t pos = text.find(kSentinel);
    if (pos == std::string::npos || text.find(kSentinel, pos + 1) != std::string::npos) {
      return BadInput(
          "probe prompt wrap must contain the body exactly once; hint: the chat template must render "
          "the user message verbatim");
    }
    head = text.substr(0, pos);
    tail = text.substr(pos + kSentinel.size());
  }
  const auto head_ids = tokenizer.Encode(head, /*add_bos=*/false, /*parse_special=*/true);
  std::vector<int32_t> tail_ids;
  const std::string& ap = layout.answer_prefix;
  if (!ap.empty() && tail.size() >= ap.size() && tail.compare(tail.size() - ap.size(), ap.size(), ap) == 0) {
    tail_ids = tokenizer.Encode(std::string_view(tail).substr(0, tail.size() - ap.size()), false, true);
    const auto ap_ids = layout.answer_ids.empty() ? EncodePiece(tokenizer, ap) : layout.answer_ids;
    tail_ids.insert(tail_ids.end(), ap_ids.begin(), ap_ids.end());
  } else {
    tail_ids = tokenizer.Encode(tail, /*add_bos=*/false, /*parse_special=*/true);
  }

  AssembledPrompt out;
  auto& p = out.prompt;
  const int32_t bos = tokenizer.bos_id();
  if (tokenizer.add_bos_default() && bos >= 0 && (head_ids.empty() || head_ids[0] != bos)) p.push_back(bos);
  p.insert(p.end(), head_ids.begin(), head_ids.end());
  p.insert(p.end(), layout.open.begin(), layout.open.end());

  int planted = static_cast<int>(layout.fact.size());
  for (const auto& d : layout.distractors) planted += static_cast<int>(d.size());
  const int fixed = static_cast<int>(p.size() + layout.close.size() + tail_ids.size()) + planted;
  const int fill = length - fixed;
  const int min_fill = std::max(32, length / 4);
  if (fill < min_fill) {
    return BadInput("probe length " + std::to_string(length) + " leaves " + std::to_string(fill) +
                    " filler tokens after the prompt's fixed parts (" + std::to_string(fixed) +
                    " tokens); hint: use a length of at least " + std::to_string(fixed + min_fill) +
                    (length / 4 > 32 ? " or a shorter template" : ""));
  }
  const int hay = fill + planted - static_cast<int>(layout.fact.size());  // H
  const int k = (depth * hay + 50) / 100;                                 // round half up; all terms are >= 0

  // Distractors: each gets a uniform filler offset; those that fit entirely before position k go
  // first, so the fact's haystack position stays exactly k; the rest follow it.
  struct Event {
    int offset;
    int rank;  // 0 distractor before the fact, 1 the fact, 2 distractor after
    int order;
    const std::vector<int32_t>* ids;
  };
  std::vector<Event> events;
  std::vector<std::pair<int, int>> drawn;  // (offset, index)
  for (size_t i = 0; i < layout.distractors.size(); ++i) {
    drawn.emplace_back(static_cast<int>(rng.Below(static_cast<uint64_t>(fill) + 1)), static_cast<int>(i));
  }
  std::sort(drawn.begin(), drawn.end());
  int acc = 0;
  std::vector<std::pair<int, int>> after;
  for (const auto& [u, i] : drawn) {
    const int len = static_cast<int>(layout.distractors[i].size());
    if (u + acc + len <= k) {
      events.push_back({u, 0, i, &layout.distractors[i]});
      acc += len;
    } else {
      after.emplace_back(u, i);
    }
  }
  // Too few filler tokens to put before the fact with only those distractors (a vocabulary in which
  // distractors are long next to the filler): later ones move in front of the fact while they fit.
  for (auto it = after.begin(); it != after.end() && k - acc > fill;) {
    const int len = static_cast<int>(layout.distractors[it->second].size());
    if (acc + len > k) {
      ++it;
      continue;
    }
    events.push_back({it->first, 0, it->second, &layout.distractors[it->second]});
    acc += len;
    it = after.erase(it);
  }
  if (k - acc > fill) {
    return BadInput("probe length " + std::to_string(length) + " cannot place the fact at depth " +
                    std::to_string(depth) + "% with its distractors (" + std::to_string(k) +
                    " haystack tokens before it, " + std::to_string(fill) +
                    " of them filler); hint: use a longer length");
  }
  const int fact_offset = k - acc;
  // Every distractor before the fact sits at or before its filler offset (exactly k tokens precede it).
  for (Event& e : events) e.offset = std::min(e.offset, fact_offset);
  events.push_back({fact_offset, 1, 0, &layout.fact});
  for (const auto& [u, i] : after) events.push_back({std::max(u, fact_offset), 2, i, &layout.distractors[i]});
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.offset, a.rank, a.order) < std::tie(b.offset, b.rank, b.order);
  });

  out.haystack_begin = static_cast<int>(p.size());
  int cur = 0;
  for (const auto& e : events) {
    KV_ASSIGN_OR_RETURN(auto gap, filler.Take(e.offset - cur));
    p.insert(p.end(), gap.begin(), gap.end());
    cur = e.offset;
    if (e.rank == 1) out.fact_token = static_cast<int>(p.size());
    p.insert(p.end(), e.ids->begin(), e.ids->end());
  }
  KV_ASSIGN_OR_RETURN(auto rest, filler.Take(fill - cur));
  p.insert(p.end(), rest.begin(), rest.end());
  out.haystack_end = static_cast<int>(p.size());
  p.insert(p.end(), layout.close.begin(), layout.close.end());
  p.insert(p.end(), tail_ids.begin(), tail_ids.end());
  KV_CHECK(static_cast<int>(p.size()) == length);
  KV_CHECK(out.fact_token - out.haystack_begin == k);
  return out;
}

}  // namespace kvaudit
