// The completions and chat request fuzz corpora (tests/fuzz/corpus/serve_request, chat_request) replayed as ordinary
// tests (so also under the asan preset): every body keeps the fuzz target's invariants
// (tests/fuzz/serve_request_invariants.h); valid_* bodies parse, bad_* ones are a clean 400.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/chat_request_invariants.h"
#include "fuzz/serve_request_invariants.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(ServeRequestCorpus, ValidBodiesParseAndBadOnesAreClean400s) {
  testing::ReplayCorpus(
      testing::RepoDir() / "tests/fuzz/corpus/serve_request",
      [](const std::string&, const std::string& text) -> std::pair<bool, std::string> {
        serve::ApiError error;
        const auto request = serve::ParseCompletionRequest(text, &error);
        EXPECT_EQ(fuzz::ServeRequestViolation(request, error), "");
        return {request.has_value(), request ? "max_tokens " + std::to_string(request->max_tokens) : error.message};
      });
}

TEST(ChatRequestCorpus, ValidBodiesParseAndBadOnesAreClean400s) {
  testing::ReplayCorpus(
      testing::RepoDir() / "tests/fuzz/corpus/chat_request",
      [](const std::string&, const std::string& text) -> std::pair<bool, std::string> {
        serve::ApiError error;
        const auto request = serve::ParseChatRequest(text, &error);
        EXPECT_EQ(fuzz::ChatRequestViolation(request, error), "");
        return {request.has_value(), request ? "messages " + std::to_string(request->messages.size()) : error.message};
      });
}

}  // namespace
}  // namespace kvaudit
