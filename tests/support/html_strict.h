// A strict HTML5 parse: every parse error of the WHATWG parsing algorithm in a document, as
// "line:col: what", for tests that a generated page (the HTML report) is exactly the markup it
// means to be, not markup a browser silently repairs.
//
// The parser is Gumbo (Debian's libgumbo-dev 0.10.1, Google's spec-conformant HTML5 parser in C),
// in process and fast. Checked on the cases of tests/browser/support_html_strict_test.cc: it
// reports a missing doctype, an element left open at </body> or end of file, mis-nested
// <b><i></b></i>, a stray </p>, a duplicate attribute, bad character references and a self-closed
// <div/>, and nothing on a clean page with inline <svg> (<title>, <g>, <path>, <text>), <style>,
// <script> and omitted optional end tags.
// Its public header gives only the number of errors (GumboOutput::errors) and keeps GumboError
// private; we read the leading fields of each (type, position, the source pointer, and for
// tree-construction errors the token's tag and the open elements), whose layout is that of
// gumbo 0.10.1's src/error.h. That layout is checked on every error (the source pointer must point
// into the document, tags must be known ones), so a different gumbo gives one clear error instead
// of garbage. The fallback considered, /usr/bin/python3 with html5lib (Debian python3-html5lib),
// reports the same cases but costs a Python subprocess per document.
#pragma once

#include <string>
#include <vector>

namespace kvaudit::testing {

// Empty for a document without parse errors. Repeats of one error at one position (gumbo reports
// a self-closed <div/> three times) are kept once.
std::vector<std::string> HtmlParseErrors(const std::string& html);

}  // namespace kvaudit::testing
