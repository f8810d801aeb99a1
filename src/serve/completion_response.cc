#include "serve/completion_response.h"

#include <span>

#include "base/json_text.h"

namespace kvaudit::serve {
namespace {

using nlohmann::json;

std::string Piece(const Tokenizer& tok, int32_t id) {
  const int32_t one[1] = {id};
  return tok.Decode(one, /*render_special=*/true);
}

// A logprobs token as text, or as vLLM writes it with return_tokens_as_token_ids
// (serving_engine.py _get_decoded_token: "token_id:<id>").
std::string Name(const Tokenizer& tok, int32_t id, bool as_ids) {
  return as_ids ? "token_id:" + std::to_string(id) : Piece(tok, id);
}

// OpenAI's top_logprobs entry: {decoded token: logprob} over the top k and the chosen token
// ("the API will always return the logprob of the sampled token, so there may be up to
// logprobs+1 elements").
json TopDict(const Tokenizer& tok, const PositionLogprobs& p, int k, bool as_ids) {
  json d = json::object();
  for (size_t i = 0; i < p.top.size() && i < static_cast<size_t>(k); ++i)
    d[Name(tok, p.top[i].first, as_ids)] = p.top[i].second;
  d[Name(tok, p.token, as_ids)] = p.logprob;
  return d;
}

// The legacy logprobs object over (echoed prompt +) generated tokens; text_offset is each token's
// byte offset in the choice's text (its decoded prefix), as vLLM computes it.
json LegacyLogprobs(const CompletionRequest& r, const CompletionOutput& o, const Tokenizer& tok,
                    size_t prompt_text_len) {
  json tokens = json::array(), token_lps = json::array(), tops = json::array(), offsets = json::array();
  const bool as_ids = r.return_tokens_as_token_ids;
  if (r.echo) {
    for (size_t i = 0; i < o.prompt_ids.size(); ++i) {
      tokens.push_back(Name(tok, o.prompt_ids[i], as_ids));
      offsets.push_back(tok.Decode(std::span<const int32_t>(o.prompt_ids).first(i)).size());
      if (i == 0) {
        token_lps.push_back(nullptr);
        tops.push_back(nullptr);
      } else {
        token_lps.push_back(o.prompt_logprobs[i - 1].logprob);
        tops.push_back(TopDict(tok, o.prompt_logprobs[i - 1], *r.logprobs, as_ids));
      }
    }
  }
  const size_t base = r.echo ? prompt_text_len : 0;
  for (size_t i = 0; i < o.generated.size(); ++i) {
    tokens.push_back(Name(tok, o.generated[i], as_ids));
    offsets.push_back(base + tok.Decode(std::span<const int32_t>(o.generated).first(i)).size());
    token_lps.push_back(o.generated_logprobs[i].logprob);
    tops.push_back(TopDict(tok, o.generated_logprobs[i], *r.logprobs, as_ids));
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

// vLLM's prompt_logprobs: one entry per prompt position, null at 0 (nothing predicts it); each the
// prompt's token and the top k, keyed by token id.
json VllmPromptLogprobs(const CompletionOutput& o, const Tokenizer& tok, int k) {
  json list = json::array({nullptr});
  for (const PositionLogprobs& p : o.prompt_logprobs) {
    json d = json::object();
    auto add = [&](int32_t id, double lp, int64_t rank) {
      d[std::to_string(id)] = {{"logprob", lp}, {"rank", rank}, {"decoded_token", Piece(tok, id)}};
    };
    add(p.token, p.logprob, p.rank);
    for (size_t i = 0; i < p.top.size() && i < static_cast<size_t>(k); ++i) {
      if (p.top[i].first != p.token) add(p.top[i].first, p.top[i].second, static_cast<int64_t>(i) + 1);
    }
    list.push_back(d);
  }
  return list;
}

}  // namespace

nlohmann::json CompletionResponse(const CompletionRequest& request, const CompletionOutput& output,
                                  const Tokenizer& tokenizer, const ResponseIds& ids) {
  const std::string prompt_text = request.prompt_is_ids ? tokenizer.Decode(output.prompt_ids) : request.prompt_text;
  json choice = {{"index", 0},
                 {"text", request.echo ? prompt_text + output.text : output.text},
                 {"finish_reason", output.finish_reason}};
  choice["logprobs"] =
      request.logprobs ? LegacyLogprobs(request, output, tokenizer, prompt_text.size()) : json(nullptr);
  if (request.prompt_logprobs)
    choice["prompt_logprobs"] = VllmPromptLogprobs(output, tokenizer, *request.prompt_logprobs);
  const size_t prompt = output.prompt_ids.size(), completion = output.generated.size();
  return {
      {"id", ids.id},
      {"object", "text_completion"},
      {"created", ids.created},
      {"model", ids.model},
      {"choices", json::array({choice})},
      {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}}}};
}

std::string DumpJson(const nlohmann::json& j) { return JsonText(j); }

}  // namespace kvaudit::serve
