#include "probe/constraint.h"

#include "probe/words.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

namespace w = probe_words;

std::string WithoutIndent(std::string_view line) {
  const size_t b = line.find_first_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(line.substr(b));
}

std::string FunctionName(ProbeRng& rng, const std::string& prefix) {
  return prefix + rng.Pick(w::kVerbs) + "_" + rng.Pick(w::kNouns);
}

// Two example functions written in the convention; `in` is one indentation level.
// q is the quote character of the quotes variant.
std::string Examples(ProbeRng& rng, const std::string& variant, const std::string& prefix, const std::string& in,
                     const std::string& q = "'") {
  if (variant == "quotes") {
    const std::string noun = rng.Pick(w::kNouns);
    return "def " + FunctionName(rng, "") + "(name):\n" + in + q + "Return the " + noun + " label for name." + q +
           "\n" + in + "return " + q + noun + ": " + q + " + name\n\n\ndef " + FunctionName(rng, "") + "(value):\n" +
           in + "if value is None:\n" + in + in + "raise TypeError(" + q + "value must not be None" + q + ")\n" + in +
           "return " + q + rng.Pick(w::kValueWords) + q + "\n";
  }
  static const char* kBodies[] = {
      "(items):\n@return len(items)\n",
      "(path, mode):\n@with open(path, mode) as f:\n@@return f.readline()\n",
      "(values):\n@total = 0\n@for value in values:\n@@if value:\n@@@total += value\n@return total\n",
  };
  const size_t first = rng.Below(3), second = (first + 1 + rng.Below(2)) % 3;
  std::string out;
  for (size_t b : {first, second}) {
    if (!out.empty()) out += "\n\n";
    out += "def " + FunctionName(rng, prefix);
    for (const char* c = kBodies[b]; *c; ++c) {
      if (*c == '@')
        out += in;
      else
        out += *c;
    }
  }
  return out;
}

struct ConstraintPlan {
  std::string header;  // the stated constraint (the fact)
  ProbeLayout layout;
  LineFilter keep;
  ProbeCheck check;
  std::string rule;
  int max_tokens = 32;
};

ConstraintPlan PlanConstraint(const std::string& variant, bool chat, ProbeRng& rng) {
  static const std::vector<std::string> kPrefixes = {"kvq_", "acme_", "zz_", "nova_", "qx_"};
  ConstraintPlan plan;
  auto& check = plan.check;
  const char* kRule = "Formatting rule for all code you write in this conversation: ";
  const char* kReference = "\n\nReference code:\n\n";
  // A line with a string literal: a quote character that is closed again on the same line.
  const char* kLiteralLine = R"((["']).*\1)";
  if (variant == "prefix") {
    const std::string prefix = rng.Pick(kPrefixes);
    plan.rule = "function names start with \"" + prefix + "\"";
    plan.keep = [](std::string_view line) {
      const std::string t = WithoutIndent(line);
      return t.rfind("def ", 0) != 0 && t.rfind("async def ", 0) != 0;
    };
    if (chat) {
      plan.header = kRule + std::string("every Python function name must start with the prefix \"") + prefix +
                    "\", for example " + FunctionName(rng, prefix) + "." + kReference;
      plan.layout.question = "Write a Python function that counts the words in a string.";
      check.kind = ProbeCheck::Kind::kEveryLine;
      check.line_filter = R"(^\s*(?:async\s+)?def\s)";
      check.pattern = R"(^\s*(?:async\s+)?def\s+)" + prefix;
    } else {
      plan.header = "# Style: every function in this module is named with the prefix \"" + prefix + "\".\n\n\n" +
                    Examples(rng, variant, prefix, "    ");
      // Ends on "def" rather than "def ": the name's leading space belongs to the name's token.
      plan.layout.answer_prefix = "\n\ndef";
      check.kind = ProbeCheck::Kind::kRegex;
      check.pattern = R"(^\s*)" + prefix;
      plan.max_tokens = 12;
    }
  } else if (variant == "quotes") {
    // Single or double, drawn: the bundled model's training code leans to single quotes, so half the
    // instances ask for the style its prior does not give for free.
    const bool single = rng.Below(2) == 0;
    const std::string style = single ? "single" : "double", q = single ? "'" : "\"";
    plan.rule = "string literals use " + style + " quotes";
    plan.keep = [](std::string_view line) { return line.find_first_of("\"'") == std::string_view::npos; };
    check.kind = ProbeCheck::Kind::kEveryLine;
    check.line_filter = kLiteralLine;
    check.pattern = single ? R"(^[^"]*$)" : R"(^[^']*$)";
    if (chat) {
      plan.header = kRule +
                    std::string(
                        "every string literal in the Python code you write, docstrings included, "
                        "must use ") +
                    style + " quotes, for example " + q + "text" + q + "." + kReference;
      plan.layout.question =
          "Write a Python function with a docstring that raises ValueError with a message when its argument is "
          "empty.";
    } else {
      plan.header = "# Style: every string literal in this module, docstrings included, uses " + style +
                    " quotes.\n\n\n" + Examples(rng, variant, "", "    ", q);
      // Ends where a string literal must come next; "(" is left to the model because the tokenizer
      // glues it to the quote that follows.
      plan.layout.answer_prefix =
          "\n\ndef " + FunctionName(rng, "") + "(name):\n    if not name:\n        raise ValueError";
    }
  } else {  // indent
    plan.rule = "indentation uses tabs";
    plan.keep = [](std::string_view line) { return line.empty() || (line[0] != ' ' && line[0] != '\t'); };
    check.kind = ProbeCheck::Kind::kEveryLine;
    check.line_filter = R"(^[ \t]+\S)";
    check.pattern = R"(^\t+\S)";
    if (chat) {
      plan.header = kRule +
                    std::string(
                        "indent all Python code you write with tabs, one tab per level, never "
                        "with spaces.") +
                    kReference;
      plan.layout.question = "Write a Python function that returns the even numbers in a list, using a for loop.";
    } else {
      plan.header = "# Style: this module is indented with one tab per level, never with spaces.\n\n\n" +
                    Examples(rng, variant, "", "\t");
      plan.layout.answer_prefix = "\n\ndef " + FunctionName(rng, "") + "(items):\n";
      plan.max_tokens = 48;
    }
  }
  if (chat) plan.max_tokens = 192;
  return plan;
}

}  // namespace

Expected<std::vector<ProbeInstance>> MakeConstraintProbes(const Tokenizer& tokenizer, const Haystack& haystack,
                                                          const ConstraintOptions& options) {
  KV_RETURN_IF_ERROR(ValidateProbeVariant("constraint", options.variant, kConstraintVariants));
  KV_RETURN_IF_ERROR(ValidateProbeGrid("constraint", options.lengths, {}, options.per_cell));
  std::vector<ProbeInstance> out;
  for (int length : options.lengths) {
    for (int i = 0; i < options.per_cell; ++i) {
      ProbeInstance p = NewProbeInstance("constraint", options.variant, length, /*depth=*/-1, i);
      ProbeRng rng(InstanceSeed(options.seed, p.id));
      ConstraintPlan plan = PlanConstraint(options.variant, static_cast<bool>(options.wrap), rng);
      plan.layout.fact = EncodePiece(tokenizer, plan.header);
      FillerStream filler(haystack, tokenizer, rng.Below(~0ull), plan.keep);
      // The constraint is the fact, planted at depth 0 (the start of the haystack region).
      KV_RETURN_IF_ERROR(PlacePrompt(tokenizer, filler, options.wrap, /*depth=*/0, plan.layout, rng, p));
      p.check = std::move(plan.check);
      p.max_tokens = plan.max_tokens;
      p.expected_text = plan.rule;
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace kvaudit
