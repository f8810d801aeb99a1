// The one trim (base/trim.h): isspace's six characters off both ends, nothing from the middle, and
// a view into the same text.
#include "base/trim.h"

#include <gtest/gtest.h>

#include <string>

namespace kvaudit {
namespace {

TEST(TrimSpace, TakesTheSixSpaceCharactersOffBothEndsOnly) {
  EXPECT_EQ(TrimSpace(" \t\n\v\f\rq4_0 , q8_0\r\f\v\n\t "), "q4_0 , q8_0");
  EXPECT_EQ(TrimSpace("k=q4_0"), "k=q4_0");
  EXPECT_EQ(TrimSpace(" \t "), "");
  EXPECT_EQ(TrimSpace(""), "");
  EXPECT_EQ(TrimSpace("\xc2\xa0x"), "\xc2\xa0x");  // no-break space is not whitespace here (bytes, C locale)
}

TEST(TrimSpace, ReturnsAViewIntoItsArgument) {
  const std::string text = "  sk-key\n";
  const std::string_view t = TrimSpace(text);
  EXPECT_EQ(t.data(), text.data() + 2);
  EXPECT_EQ(t.size(), 6u);
}

}  // namespace
}  // namespace kvaudit
