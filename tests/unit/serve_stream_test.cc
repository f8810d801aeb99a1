// Streaming's pure parts (src/serve/stream_text.h, stream_chunks.h): what may be sent of the text
// so far (no stop string, not even its start; no UTF-8 sequence cut short), that every delta
// joined is the final text, and the chunks' OpenAI shapes.
#include <gtest/gtest.h>

#include <string>

#include "serve/stream_chunks.h"
#include "serve/stream_text.h"

namespace kvaudit::serve {
namespace {

using nlohmann::json;

// Feeds text as successive prefixes cut at `cuts` (byte counts), then Finish(final).
std::vector<std::string> Stream(StreamText& s, const std::string& text, const std::vector<size_t>& cuts,
                                const std::string& final_text) {
  std::vector<std::string> deltas;
  for (size_t cut : cuts) deltas.push_back(s.Delta(text.substr(0, cut)));
  deltas.push_back(s.Finish(final_text));
  return deltas;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

TEST(ServeStreamTextTest, Utf8SequencesAreHeldUntilComplete) {
  EXPECT_EQ(CompleteUtf8Prefix("ab"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xC3"), 1u);  // é's first byte
  EXPECT_EQ(CompleteUtf8Prefix("a\xC3\xA9"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("\xE2\x82"), 0u);       // € cut after 2 of 3
  EXPECT_EQ(CompleteUtf8Prefix("x\xF0\x9F\x98"), 1u);  // 😀 cut after 3 of 4
  EXPECT_EQ(CompleteUtf8Prefix("x\xF0\x9F\x98\x80"), 5u);
  EXPECT_EQ(CompleteUtf8Prefix("\x80\x80"), 2u);  // stray continuation bytes are not held
  const std::string text = "h\xC3\xA9 \xE2\x82\xAC\xF0\x9F\x98\x80!";
  StreamText s({});
  std::vector<size_t> every_byte;
  for (size_t i = 1; i <= text.size(); ++i) every_byte.push_back(i);
  const auto deltas = Stream(s, text, every_byte, text);
  for (const std::string& d : deltas) EXPECT_EQ(CompleteUtf8Prefix(d), d.size()) << d;
  EXPECT_EQ(Join(deltas), text);
}

TEST(ServeStreamTextTest, StopStringsNeverLeakNotEvenTheirStart) {
  // The model writes "x = 1\n\ndef g" and the request stops at "\n\nd": the text ends at "x = 1".
  const std::string text = "x = 1\n\ndef g";
  StreamText s({"\n\nd", "END"});
  const std::vector<std::string> deltas = Stream(s, text, {3, 5, 6, 7, 8}, "x = 1");
  EXPECT_EQ(deltas[0], "x =");
  EXPECT_EQ(deltas[1], " 1");
  EXPECT_EQ(deltas[2], "");  // "\n" could start the stop string
  EXPECT_EQ(deltas[3], "");  // "\n\n" too
  EXPECT_EQ(deltas[4], "");  // "\n\nd" is it
  EXPECT_EQ(Join(deltas), "x = 1");
  // A start that turns out not to be one is sent once it is not.
  StreamText t({"END"});
  EXPECT_EQ(t.Delta("ab EN"), "ab ");
  EXPECT_EQ(t.Delta("ab ENd"), "ENd");
  EXPECT_EQ(t.Finish("ab ENd"), "");
}

TEST(ServeStreamChunksTest, CompletionAndChatChunksHaveOpenAisShape) {
  const ResponseIds ids{"cmpl-1", 1764614400, "kvq-code-16m"};
  const json text = TextChunk(StreamRoute::kCompletions, ids, "ab", "", false, false);
  EXPECT_EQ(text, json::parse(R"({"id": "cmpl-1", "object": "text_completion", "created": 1764614400,
      "model": "kvq-code-16m", "choices": [{"index": 0, "text": "ab", "logprobs": null, "finish_reason": null}]})"));
  const json first = TextChunk(StreamRoute::kChat, ids, "", "", true, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  const json last = TextChunk(StreamRoute::kChat, ids, "", "length", false, false);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last.contains("usage"));
  const json usage = UsageChunk(StreamRoute::kChat, ids, 5, 3);
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"], json({{"prompt_tokens", 5}, {"completion_tokens", 3}, {"total_tokens", 8}}));
  EXPECT_EQ(SseEvent(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_STREQ(kSseDone, "data: [DONE]\n\n");
}

}  // namespace
}  // namespace kvaudit::serve
