#include "serve/chat_response.h"

namespace kvaudit::serve {
namespace {

using nlohmann::json;

// One token as OpenAI's ChatCompletionTokenLogprob writes it: the decoded token, its logprob and
// its UTF-8 bytes ("useful in instances where characters are represented by multiple tokens").
json TokenEntry(const Tokenizer& tok, int32_t id, double logprob) {
  const int32_t one[1] = {id};
  const std::string piece = tok.Decode(one, /*render_special=*/true);
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return {{"token", piece}, {"logprob", logprob}, {"bytes", bytes}};
}

json ChatLogprobs(const CompletionOutput& o, const Tokenizer& tok, int k) {
  json content = json::array();
  for (size_t i = 0; i < o.generated.size(); ++i) {
    const PositionLogprobs& p = o.generated_logprobs[i];
    json entry = TokenEntry(tok, o.generated[i], p.logprob);
    json top = json::array();  // the k most likely, most likely first (the sampled one need not be among them)
    for (size_t t = 0; t < p.top.size() && t < static_cast<size_t>(k); ++t) {
      top.push_back(TokenEntry(tok, p.top[t].first, p.top[t].second));
    }
    entry["top_logprobs"] = top;
    content.push_back(entry);
  }
  return {{"content", content}};
}

}  // namespace

nlohmann::json Usage(size_t prompt_tokens, size_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

nlohmann::json ChatCompletionResponse(const CompletionRequest& request, const CompletionOutput& output,
                                      const Tokenizer& tokenizer, const ResponseIds& ids) {
  const std::optional<int>& k = request.logprobs;
  json choice = {{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", output.text}}},
                 {"logprobs", k ? ChatLogprobs(output, tokenizer, *k) : json(nullptr)},
                 {"finish_reason", output.finish_reason}};
  return {{"id", ids.id},
          {"object", "chat.completion"},
          {"created", ids.created},
          {"model", ids.model},
          {"choices", json::array({choice})},
          {"usage", Usage(output.prompt_ids.size(), output.generated.size())}};
}

}  // namespace kvaudit::serve
