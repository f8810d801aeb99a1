// JSON text never throws (base/json_text.h): a string that is not valid UTF-8 — a byte-level
// tokenizer's output cut in the middle of a character — is written with U+FFFD in its place, and
// every JSON kvaudit writes goes through JsonText (no other dump() in src/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json_text.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(BaseJsonText, InvalidUtf8BecomesReplacementCharacters) {
  const nlohmann::json j = {{"text", std::string("ok \xE2\x82 cut \xFF!")}};
  std::string out;
  ASSERT_NO_THROW(out = JsonText(j));
  EXPECT_EQ(out, "{\"text\":\"ok \xEF\xBF\xBD cut \xEF\xBF\xBD!\"}");
  EXPECT_EQ(JsonText({{"a", 1}}, 2), "{\n  \"a\": 1\n}");
}

TEST(BaseJsonText, NoOtherDumpInTheSources) {
  const std::filesystem::path src = testing::RepoDir() / "src";
  ASSERT_TRUE(std::filesystem::is_directory(src)) << src;
  for (const auto& e : std::filesystem::recursive_directory_iterator(src)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h") || e.path().filename() == "json_text.h") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().find(".dump("), std::string::npos)
        << e.path() << " calls nlohmann's dump(), which throws on invalid UTF-8: use JsonText (base/json_text.h)";
  }
}

}  // namespace
}  // namespace kvaudit
