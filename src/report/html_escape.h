// Text for an HTML (or inline SVG) page: the one escape for character data and attribute values.
#pragma once

#include <string>
#include <string_view>

namespace kvaudit::report {

// & < > " ' become &amp; &lt; &gt; &quot; &#39; (safe in text and in both quote styles of
// attribute values). Each byte that does not start a valid UTF-8 sequence (stray continuation
// bytes, overlong forms, surrogates, > U+10FFFF, truncated sequences) becomes U+FFFD, as do the
// C0 controls other than tab, newline and carriage return and the noncharacters U+FFFE and
// U+FFFF, which XML 1.0 forbids: the page is always valid UTF-8 and every inline <svg> is
// well-formed XML.
std::string EscapeHtml(std::string_view s);

}  // namespace kvaudit::report
