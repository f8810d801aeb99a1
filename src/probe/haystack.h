// Filler text for probe prompts and the token-exact assembly every probe family shares.
//
// A Haystack is the lines of the user's documents (or the bundled eval documents). A FillerStream
// walks those lines from a seeded start, wrapping at the end but never repeating a line (nor handing
// out more than two blank lines in a row), and hands out exactly n tokens at a time: whole lines
// tokenized together (so the ids are the tokenizer's own for that text), then at most one line
// truncated token-wise so the count is exact. Prompts are then built by concatenating the ids of
// separately tokenized pieces (filler, fact, question), which keeps every piece's position exact.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "probe/instance.h"

namespace kvaudit {

class Tokenizer;

// One filler line as text = head + value + tail. Only value is cut when the line is truncated, so a
// shaped line (a JSON entry: head `  "key": "`, tail `",\n`) stays well-formed. tail ends with '\n'.
struct FillerLine {
  std::string head;
  std::string value;
  std::string tail = "\n";
};
// keep(line): whether a haystack line (without its '\n') may be used. Empty = keep all.
using LineFilter = std::function<bool(std::string_view line)>;
// shape(line, ordinal): the filler line made from a kept haystack line; ordinal counts the stream's
// lines from 0. Empty = the line itself.
using LineShape = std::function<FillerLine(std::string_view line, int ordinal)>;

class Haystack {
 public:
  // Documents are split into lines ('\r' dropped) and separated by a blank line.
  static Expected<Haystack> FromDocuments(const std::vector<std::string>& docs);
  // A text file, a folder of text files or JSONL with "text" (LoadDocuments).
  static Expected<Haystack> Load(const std::string& path);

  size_t line_count() const { return lines_.size(); }
  const std::string& line(size_t i) const { return lines_[i]; }  // without '\n'

 private:
  std::vector<std::string> lines_;
};

class FillerStream {
 public:
  // The stream starts at a line drawn from seed. haystack and tokenizer must outlive the stream.
  FillerStream(const Haystack& haystack, const Tokenizer& tokenizer, uint64_t seed, LineFilter keep = {},
               LineShape shape = {});

  // Exactly n ids (n >= 0) that decode to whole filler lines, the last one possibly truncated; they
  // end with a newline when n > 0. BadInput when the haystack's unused lines are too few.
  Expected<std::vector<int32_t>> Take(int n);

 private:
  // The next kept line after the cursor, or false when every line has been visited.
  bool NextLine(FillerLine* out);
  Expected<std::vector<int32_t>> TakeFrom(std::vector<FillerLine> lines, int n);

  const Haystack& haystack_;
  const Tokenizer& tokenizer_;
  LineFilter keep_;
  LineShape shape_;
  size_t start_ = 0;
  size_t visited_ = 0;  // lines looked at so far (kept or not)
  int ordinal_ = 0;
  int blank_run_ = 0;                // blank lines just handed out
  std::vector<FillerLine> pending_;  // lines read ahead but not used yet
};

// What a family plants in a prompt; the assembly below lays it out and makes the length exact.
struct ProbeLayout {
  std::string question;       // shown to chat models only (see PromptWrap)
  std::string answer_prefix;  // the cue the answer continues from
  // answer_prefix's ids when they must be exact (the first tokens of a planted span); empty = its
  // EncodePiece. Used where the wrapped text ends with answer_prefix (always for completion style).
  std::vector<int32_t> answer_ids;
  std::vector<int32_t> open;                      // fixed ids before the haystack inside the body (e.g. "{\n")
  std::vector<int32_t> close;                     // fixed ids after the haystack inside the body
  std::vector<int32_t> fact;                      // planted at the depth
  std::vector<std::vector<int32_t>> distractors;  // planted at random positions of the haystack
};

struct AssembledPrompt {
  std::vector<int32_t> prompt;
  int fact_token = -1;
  int haystack_begin = 0;
  int haystack_end = 0;
};

// Lays out [BOS] wrap-head open (filler, fact, distractors) close wrap-tail, with exactly `length`
// ids in all and the fact's first token at round(depth / 100 * H) into the haystack region
// (H = haystack tokens other than the fact). rng places the distractors.
Expected<AssembledPrompt> AssemblePrompt(const Tokenizer& tokenizer, FillerStream& filler, const PromptWrap& wrap,
                                         int length, int depth, const ProbeLayout& layout, ProbeRng& rng);

// AssemblePrompt at p's length, the result placed in p: its prompt, the fact's span (layout.fact)
// and the haystack's. An error is prefixed with p's id.
Status PlacePrompt(const Tokenizer& tokenizer, FillerStream& filler, const PromptWrap& wrap, int depth,
                   const ProbeLayout& layout, ProbeRng& rng, ProbeInstance& p);

// Data text as ids: no BOS, special-token text kept literal, no SentencePiece dummy-prefix space
// (the ids decode back to exactly `text` where the vocabulary allows).
std::vector<int32_t> EncodePiece(const Tokenizer& tokenizer, std::string_view text);

}  // namespace kvaudit
