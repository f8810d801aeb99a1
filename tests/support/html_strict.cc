#include "support/html_strict.h"

#include <gumbo.h>

#include <cstdint>
#include <set>
#include <tuple>

namespace kvaudit::testing {
namespace {

// The leading fields of gumbo 0.10.1's GumboError (its private src/error.h), the part read here.
struct GumboErrorHead {
  int type;                      // GumboErrorType: 0..39 tokenizer, 40 tree construction, 41 '/>'
  GumboSourcePosition position;  // line and column are 1-based
  const char* original_text;     // into the parsed buffer
  union {
    uint64_t codepoint;  // sets the union's size and alignment, as in gumbo
    struct {
      int input_type;         // GumboTokenType: 0 doctype, 1 start tag, 2 end tag, 3 comment,
                              // 4 whitespace, 5 characters, 6 CDATA, 7 NUL, 8 end of file
      GumboTag input_tag;     // of a tag token
      int parser_state;       // GumboInsertionMode: 0 "initial", before any doctype
      GumboVector tag_stack;  // the open elements, GumboTag values stored in the void* slots
    } parser;
  } v;
};
constexpr int kParserError = 40, kSelfClosingError = 41;

// What each tokenizer error (GumboErrorType 0..39) means, in our words.
constexpr const char* kTokenizerErrors[40] = {"invalid UTF-8",
                                              "truncated UTF-8 sequence",
                                              "NUL character",
                                              "numeric character reference without digits",
                                              "numeric character reference without ';'",
                                              "invalid numeric character reference",
                                              "named character reference without ';' (write &amp;)",
                                              "unknown named character reference (write &amp;)",
                                              "'<?' (processing instructions are not HTML)",
                                              "end of file in a tag",
                                              "'<' that starts no tag (write &lt;)",
                                              "empty end tag '</>'",
                                              "end of file in an end tag",
                                              "invalid end tag",
                                              "end of file in <script>",
                                              "end of file in an attribute name",
                                              "invalid character in an attribute name",
                                              "end of file in a double-quoted attribute value",
                                              "end of file in a single-quoted attribute value",
                                              "end of file in an unquoted attribute value",
                                              "attribute value missing before '>'",
                                              "'=', '<', a quote or '`' in an unquoted attribute value",
                                              "end of file after an attribute",
                                              "no whitespace between attributes",
                                              "duplicate attribute",
                                              "end of file after '/' in a tag",
                                              "'/' not followed by '>' in a tag",
                                              "'<!' that starts neither a comment nor a doctype",
                                              "end of file in a comment",
                                              "invalid comment",
                                              "'--!' in a comment",
                                              "'---' in a comment",
                                              "'-- ' in a comment",
                                              "end of file after '--!' in a comment",
                                              "end of file in a doctype",
                                              "invalid doctype",
                                              "missing whitespace in a doctype",
                                              "doctype ends early",
                                              "unexpected character in a doctype",
                                              "unexpected text at the end of a doctype"};

bool KnownTag(int tag) { return tag >= 0 && tag <= GUMBO_TAG_LAST; }

// The layout check: a gumbo whose GumboError differs fails it instead of printing garbage.
bool Plausible(const GumboErrorHead& e, const std::string& html) {
  const char* begin = html.data();
  if (e.type < 0 || e.type > kSelfClosingError || e.position.line < 1) return false;
  if (e.original_text < begin || e.original_text > begin + html.size()) return false;
  if (e.type < kParserError) return true;
  const auto& p = e.v.parser;
  if (p.input_type < 0 || p.input_type > 8 || !KnownTag(p.input_tag) || p.tag_stack.length > 100000) return false;
  for (unsigned i = 0; i < p.tag_stack.length; ++i) {
    if (!KnownTag(static_cast<int>(reinterpret_cast<intptr_t>(p.tag_stack.data[i])))) return false;
  }
  return true;
}

std::string TagName(GumboTag tag) { return tag == GUMBO_TAG_UNKNOWN ? "(unknown)" : gumbo_normalized_tagname(tag); }

// A tree-construction error: the token that was not allowed, and the open elements.
std::string ParserErrorText(const GumboErrorHead& e) {
  const auto& p = e.v.parser;
  const std::string tag = TagName(p.input_tag);
  std::string what;
  switch (p.input_type) {
    case 0: what = "doctype not allowed here"; break;
    case 1: what = "start tag <" + tag + "> not allowed here"; break;
    case 2: what = "end tag </" + tag + "> does not close an open element in scope"; break;
    case 7: what = "NUL character"; break;
    case 8: what = "end of file with elements still open"; break;
    default: what = "text or comment not allowed here"; break;
  }
  if (p.parser_state == 0) what = "missing <!DOCTYPE html> (" + what + ")";
  std::string open;
  for (unsigned i = 0; i < p.tag_stack.length; ++i) {
    open += (i ? " > " : "") + TagName(static_cast<GumboTag>(reinterpret_cast<intptr_t>(p.tag_stack.data[i])));
  }
  return what + (open.empty() ? "" : "; open: " + open);
}

// Up to 30 bytes of the source at the error, to its line's end.
std::string Near(const GumboErrorHead& e, const std::string& html) {
  const size_t at = static_cast<size_t>(e.original_text - html.data());
  std::string s = html.substr(at, 30);
  s = s.substr(0, s.find('\n'));
  return s.empty() ? " at end of file" : " near `" + s + "`";
}

std::string Describe(const GumboErrorHead& e, const std::string& html) {
  std::string what = e.type == kParserError        ? ParserErrorText(e)
                     : e.type == kSelfClosingError ? "'/>' on a non-void element does not close it"
                                                   : kTokenizerErrors[e.type];
  return std::to_string(e.position.line) + ":" + std::to_string(e.position.column) + ": " + what + Near(e, html);
}

}  // namespace

std::vector<std::string> HtmlParseErrors(const std::string& html) {
  GumboOptions options = kGumboDefaultOptions;
  options.tab_stop = 1;  // a column counts characters, as a test's expected "line:col" does
  // max_errors stays the default -1: every error is recorded.
  GumboOutput* out = gumbo_parse_with_options(&options, html.data(), html.size());
  std::vector<std::string> errors;
  std::set<std::tuple<int, unsigned>> seen;  // (type, offset)
  for (unsigned i = 0; i < out->errors.length; ++i) {
    const auto& e = *static_cast<const GumboErrorHead*>(out->errors.data[i]);
    if (!Plausible(e, html)) {
      errors = {"gumbo's GumboError is not laid out as in 0.10.1 (support/html_strict.cc): " +
                std::to_string(out->errors.length) + " parse errors, unreadable"};
      break;
    }
    if (seen.insert({e.type, e.position.offset}).second) errors.push_back(Describe(e, html));
  }
  gumbo_destroy_output(&options, out);
  return errors;
}

}  // namespace kvaudit::testing
