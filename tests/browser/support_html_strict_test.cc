// support/html_strict.h: gumbo's strict HTML5 parse reports each kind of mistake a generated page
// could make, at its line:col, and nothing on a clean page with the report's ingredients.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/html_strict.h"

namespace kvaudit::testing {
namespace {

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// A document with the given body, line 3 onward (the doctype and head are lines 1 and 2).
std::string Page(const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>t</title></head>\n<body>" + body +
         "</body></html>\n";
}

TEST(HtmlStrict, CleanPageWithSvgStyleAndScriptHasNoErrors) {
  const std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>report</title>\n"
      "<style>main > p { color: #333 } a[href^=\"#\"] { text-decoration: none }</style>\n</head>\n<body>\n"
      "<main><h1>KV &amp; cache</h1><p>one<p>two (optional end tags omitted)\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 100 50\" role=\"img\" aria-labelledby=\"t1\">\n"
      "<title id=\"t1\">a chart</title><g class=\"bars\"><path d=\"M0 0L10 10\" stroke=\"black\"/>\n"
      "<rect x=\"1\" y=\"2\" width=\"3\" height=\"4\"/><text x=\"5\" y=\"9\" text-anchor=\"end\">a &lt; "
      "b</text></g></svg>\n"
      "<table><thead><tr><th>k<th>v<tbody><tr><td>1<td>2</table><br><img src=\"x.png\" alt=\"\"></main>\n"
      "<script>const s = '</p><div>'; if (1 < 2 && 3 > 2) document.body.dataset.ok = s;</script>\n"
      "</body>\n</html>\n";
  EXPECT_EQ(Join(HtmlParseErrors(html)), "");
}

TEST(HtmlStrict, MissingDoctype) {
  const auto errors = HtmlParseErrors("<html><head><title>t</title></head><body><p>x</p></body></html>");
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_EQ(errors[0].rfind("1:1: missing <!DOCTYPE html>", 0), 0u) << errors[0];
}

TEST(HtmlStrict, DivLeftOpenAtBodyEnd) {
  const auto errors = HtmlParseErrors(Page("<div>unclosed"));
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_NE(errors[0].find("end tag </body>"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("open: html > body > div"), std::string::npos) << errors[0];
}

TEST(HtmlStrict, DivLeftOpenAtEndOfFile) {
  const auto errors = HtmlParseErrors("<!DOCTYPE html>\n<title>t</title>\n<div>x");
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_EQ(errors[0], "3:7: end of file with elements still open; open: html > body > div at end of file");
}

TEST(HtmlStrict, MisnestedInlineElements) {
  const auto errors = HtmlParseErrors(Page("<b><i>x</b></i>"));
  ASSERT_GE(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("3:14: end tag </b>", 0), 0u) << Join(errors);
}

TEST(HtmlStrict, StrayEndTag) {
  const auto errors = HtmlParseErrors(Page("\n<p>ok</p></p>"));
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_EQ(errors[0].rfind("4:10: end tag </p>", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("near `</p></body></html>`"), std::string::npos) << errors[0];
}

TEST(HtmlStrict, DuplicateAttribute) {
  const auto errors = HtmlParseErrors(Page("<p class=\"a\" class=\"b\">x</p>"));
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_NE(errors[0].find("duplicate attribute"), std::string::npos) << errors[0];
}

TEST(HtmlStrict, BadCharacterReferences) {
  const auto errors = HtmlParseErrors(Page("<p>&nosuch; &amp x</p>"));
  ASSERT_EQ(errors.size(), 2u) << Join(errors);
  EXPECT_NE(errors[0].find("unknown named character reference"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("without ';'"), std::string::npos) << errors[1];
}

TEST(HtmlStrict, SelfClosedDivIsReportedOnce) {
  // gumbo records this error three times at one position; the reader keeps one.
  const auto errors = HtmlParseErrors(Page("<div/>x</div>"));
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_NE(errors[0].find("'/>' on a non-void element"), std::string::npos) << errors[0];
}

TEST(HtmlStrict, ContentInTheWrongTablePlace) {
  const auto errors = HtmlParseErrors(Page("<table><div>x</div></table>"));
  ASSERT_GE(errors.size(), 1u);
  EXPECT_NE(errors[0].find("start tag <div> not allowed here"), std::string::npos) << Join(errors);
}

}  // namespace
}  // namespace kvaudit::testing
