// RemoteBackend's two scoring calls (endpoint/remote_backend.h): the server's prompt logprobs, in
// vLLM's shape (choices[0].prompt_logprobs = [null, {"<id>": {logprob, rank, decoded_token}}, ...]:
// vllm/entrypoints/openai/protocol.py CompletionResponseChoice), and the tokenizer check against
// /tokenize and /detokenize (llama-server: {content, add_special} -> {tokens}, {tokens} ->
// {content}; vLLM: {prompt, add_special_tokens} -> {tokens}, {tokens} -> {prompt}).
#include <algorithm>
#include <charconv>

#include "endpoint/logprob_json.h"
#include "endpoint/remote_backend.h"

namespace kvaudit {
namespace {

using nlohmann::json;

Error Bad(const HttpClient& c, const std::string& path, const std::string& what, const std::string& hint) {
  return BadInput(c.spec().Url(path) + ": " + what + "; hint: " + hint);
}

// A token's text for an error line: control bytes escaped, at most 40 bytes.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out + "'";
}

// One position's dict -> its entry for `token` and the top k. The dict holds the top k and the
// token's own entry (k + 1 entries when the token is not among the top k).
Expected<PromptPositionLogprobs> ReadPosition(const json& dict, int32_t token, int k, const HttpClient& c, size_t i) {
  const std::string path = "/v1/completions", where = "prompt_logprobs[" + std::to_string(i) + "]";
  if (!dict.is_object()) return Bad(c, path, where + " is not an object", "the server ignored prompt_logprobs");
  const std::string key = std::to_string(token);
  if (!dict.contains(key)) return Bad(c, path, where + " has no entry for the prompt's token " + key, "pass --dialect");
  PromptPositionLogprobs p;
  p.token = token;
  const auto lp = LogprobField(dict[key], "logprob");
  const auto rank = LogprobField(dict[key], "rank");
  if (!lp || !rank) return Bad(c, path, where + "[\"" + key + "\"] has no logprob and rank", "pass --dialect");
  p.logprob = *lp;
  p.rank = static_cast<int64_t>(*rank);
  const bool token_outside = dict.size() > static_cast<size_t>(k);
  for (auto it = dict.begin(); it != dict.end(); ++it) {
    if (token_outside && it.key() == key) continue;
    const auto v = LogprobField(it.value(), "logprob");
    int32_t id = -1;
    const std::string& name = it.key();
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (ec != std::errc() || end != name.data() + name.size() || id < 0) {
      return Bad(c, path, where + " has a key '" + name + "' that is not a token id", "pass --dialect");
    }
    if (!v) return Bad(c, path, where + "[\"" + it.key() + "\"] has no logprob", "pass --dialect");
    p.top.emplace_back(id, *v);
  }
  SortTopK(p.top, k);
  return p;
}

}  // namespace

Expected<std::vector<PromptPositionLogprobs>> RemoteBackend::PromptLogprobs(std::span<const int32_t> ids, int k,
                                                                            size_t first, bool reuse_prefix) const {
  const std::string path = "/v1/completions";
  if (ids.size() >= 2 && caps_.prompt_logprobs != Support::kYes && caps_.prefix_logprobs == Support::kYes)
    return PrefixLogprobs(ids, k, first, reuse_prefix);
  if (caps_.prompt_logprobs != Support::kYes) {
    return Bad(client_, path, std::string("the ") + DialectName(dialect_) + " dialect has no prompt logprobs",
               "fidelity needs vLLM, llama-server or kvaudit serve; probes and generation still run");
  }
  if (ids.size() < 2) return std::vector<PromptPositionLogprobs>();
  json body = {{"prompt", std::vector<int32_t>(ids.begin(), ids.end())},
               {"max_tokens", 1},
               {"temperature", 0.0},
               {"prompt_logprobs", k}};
  if (!model_id_.empty()) body["model"] = model_id_;
  KV_ASSIGN_OR_RETURN(json reply, client_.Post(path, body));
  const json* list = nullptr;
  if (reply.is_object() && reply.contains("choices") && reply["choices"].is_array() && !reply["choices"].empty() &&
      reply["choices"][0].contains("prompt_logprobs")) {
    list = &reply["choices"][0]["prompt_logprobs"];
  }
  if (!list || !list->is_array() || list->size() != ids.size()) {
    return Bad(
        client_, path,
        "choices[0].prompt_logprobs is missing or not one entry per prompt token (" + std::to_string(ids.size()) + ")",
        "the server ignored prompt_logprobs; pass --dialect");
  }
  std::vector<PromptPositionLogprobs> out;  // [ids.size() - 1]
  for (size_t i = 1; i < ids.size(); ++i) {
    KV_ASSIGN_OR_RETURN(PromptPositionLogprobs p, ReadPosition((*list)[i], ids[i], k, client_, i));
    out.push_back(std::move(p));
  }
  return out;
}

Expected<std::vector<TopKRow>> RemoteBackend::ForcedTopK(std::span<const int32_t> prompt,
                                                         std::span<const int32_t> continuation, int k) {
  KV_CHECK(!prompt.empty());
  if (continuation.empty()) return std::vector<TopKRow>();
  std::vector<int32_t> ids(prompt.begin(), prompt.end());
  ids.insert(ids.end(), continuation.begin(), continuation.end());
  KV_ASSIGN_OR_RETURN(std::vector<PromptPositionLogprobs> rows,
                      PromptLogprobs(ids, k, prompt.size() - 1));  // [ids.size() - 1]
  std::vector<TopKRow> out;  // entry j predicts ids[j + 1]: the continuation's from prompt.size() - 1 on
  for (size_t j = prompt.size() - 1; j < rows.size(); ++j) {
    if (rows[j].top.empty()) {
      return Bad(client_, "/v1/completions", "position " + std::to_string(j + 1) + " came back without top logprobs",
                 "the server must honour prompt_logprobs (vLLM, kvaudit serve)");
    }
    out.push_back({rows[j].token, rows[j].logprob, std::move(rows[j].top)});
  }
  KV_CHECK(out.size() == continuation.size());
  return out;
}

Expected<TokenizerCheck> RemoteBackend::CheckTokenizer(const Tokenizer& tokenizer,
                                                       std::span<const std::string> samples) const {
  TokenizerCheck check;
  if (caps_.tokenize == Support::kNo) {
    check.note = std::string("the ") + DialectName(dialect_) + " dialect has no /tokenize: tokenization not checked";
    return check;
  }
  const bool vllm_shape = caps_.tokenize_shape == "prompt";
  for (size_t s = 0; s < samples.size(); ++s) {
    json body = vllm_shape ? json{{"prompt", samples[s]}, {"add_special_tokens", true}}
                           : json{{"content", samples[s]}, {"add_special", true}};
    if (vllm_shape && !model_id_.empty()) body["model"] = model_id_;
    KV_ASSIGN_OR_RETURN(std::optional<json> reply, client_.PostIfPresent("/tokenize", body));
    if (!reply) {
      check.note = client_.spec().Url("/tokenize") + " is absent: tokenization not checked";
      return check;
    }
    const json tokens = reply->is_object() ? reply->value("tokens", json()) : json();
    std::vector<int32_t> server;
    for (const json& t : tokens.is_array() ? tokens : json::array()) {
      if (!t.is_number_integer()) return Bad(client_, "/tokenize", "'tokens' holds a non-id", "pass --dialect");
      server.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    if (!tokens.is_array()) return Bad(client_, "/tokenize", "the answer has no 'tokens' array", "pass --dialect");
    const std::vector<int32_t> local = tokenizer.Encode(samples[s], tokenizer.add_bos_default());
    size_t i = 0;
    while (i < local.size() && i < server.size() && local[i] == server[i]) ++i;
    check.tokens += static_cast<int64_t>(std::min(local.size(), server.size()));
    if (i == local.size() && i == server.size()) continue;
    auto local_side = [&]() -> std::string {
      if (i >= local.size()) return "local <end>";
      const int32_t one[1] = {local[i]};
      return "local " + std::to_string(local[i]) + " " + Quote(tokenizer.Decode(one, true));
    };
    auto server_side = [&]() -> std::string {
      if (i >= server.size()) return "server <end>";
      json detok = {{"tokens", {server[i]}}};
      if (vllm_shape && !model_id_.empty()) detok["model"] = model_id_;
      auto piece = client_.PostIfPresent("/detokenize", detok);
      const char* key = vllm_shape ? "prompt" : "content";
      std::string text = "?";
      if (piece.ok() && *piece && (*piece)->is_object() && (**piece).contains(key) && (**piece)[key].is_string()) {
        text = (**piece)[key].get<std::string>();
      }
      return "server " + std::to_string(server[i]) + " " + Quote(text);
    };
    return BadInput(client_.spec().Url("/tokenize") + ": the server's tokenizer differs from the local one: sample " +
                    std::to_string(s) + " " + Quote(samples[s]) + ", token " + std::to_string(i) + ": " + local_side() +
                    ", " + server_side() + "; hint: pass the served model's directory or GGUF as --model");
  }
  check.checked = true;
  check.samples = static_cast<int>(samples.size());
  check.note = "tokenizer matches on " + std::to_string(samples.size()) + " samples";
  return check;
}

}  // namespace kvaudit
