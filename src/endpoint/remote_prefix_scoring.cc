// RemoteBackend's teacher forcing where the server has no prompt logprobs (llama-server): one
// POST /completion per position over the prefix before it, with n_probs k, n_predict 1 and the
// prompt's next token forced as the sampled one (logit_bias, greedy), so that
//   completion_probabilities[0].top_logprobs  = the top k of the softmax of the raw logits, and
//   completion_probabilities[0].logprob       = the forced token's own log-probability, in or out of the top k
// (llama.cpp tools/server/server-context.cpp populate_token_probs and server-common.cpp
// get_token_probabilities @de3ff815: without post_sampling_probs both come from the whole
// vocabulary's softmax, before any sampler; the README's "n_probs"). With cache_prompt the slot
// keeps the previous request's prefix, so each request evaluates one new token, as decode does.
//
// A token whose text is an incomplete UTF-8 sequence (a byte-fallback token, a lone byte of a
// multi-byte character) comes back without completion_probabilities: the server holds such text
// back until the character completes, and records probabilities only with text it sends
// (server-context.cpp process_token: add_token only when !incomplete). That position is asked
// again with a plain ASCII token forced instead and n_probs over the whole vocabulary (the server
// caps n_probs at the vocabulary), which holds the true token's log-probability and its rank;
// the list does not depend on the token forced, since it is computed before any sampler.

#include "endpoint/logprob_json.h"
#include "endpoint/remote_backend.h"

namespace kvaudit {
namespace {

using nlohmann::json;

Error BadPrefixAnswer(const HttpClient& c, const std::string& what, const std::string& hint) {
  return BadInput(c.spec().Url("/completion") + ": " + what + "; hint: " + hint);
}

std::optional<int32_t> TokenIdOf(const json& entry) {
  if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer()) return std::nullopt;
  const int64_t id = entry["id"].get<int64_t>();
  if (id < 0 || id > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(id);
}

// completion_probabilities[0] of one answer -> the position's entry for `token`.
Expected<PromptPositionLogprobs> ReadNext(const json& reply, int32_t token, int k, const HttpClient& c, size_t pos) {
  const std::string where = "position " + std::to_string(pos);
  const json* first = nullptr;
  if (reply.is_object() && reply.contains("completion_probabilities") && reply["completion_probabilities"].is_array() &&
      !reply["completion_probabilities"].empty()) {
    first = &reply["completion_probabilities"][0];
  }
  if (!first || !first->is_object()) {
    return BadPrefixAnswer(c, where + ": the answer has no completion_probabilities[0]",
                           "is this llama-server? pass --dialect");
  }
  const std::optional<int32_t> sampled = TokenIdOf(*first);
  const std::optional<double> lp = LogprobField(*first, "logprob");
  if (!sampled || !lp) {
    return BadPrefixAnswer(c, where + ": completion_probabilities[0] has no id and logprob",
                           "a llama-server older than the top_logprobs answer (2025) is not supported");
  }
  if (*sampled != token) {
    return BadPrefixAnswer(c,
                           where + ": the server sampled " + std::to_string(*sampled) + " where logit_bias forced " +
                               std::to_string(token),
                           "the server must apply logit_bias (llama-server's /completion does)");
  }
  const json list = first->value("top_logprobs", json());
  if (!list.is_array() || list.empty()) {
    return BadPrefixAnswer(c, where + ": completion_probabilities[0].top_logprobs is missing",
                           "the server ignored n_probs or post_sampling_probs false; pass --dialect");
  }
  PromptPositionLogprobs p;
  p.token = token, p.logprob = *lp, p.rank = k + 1;  // outside the top k: at least k + 1
  for (const json& e : list) {
    const std::optional<int32_t> id = TokenIdOf(e);
    const std::optional<double> v = LogprobField(e, "logprob");
    if (!id || !v) return BadPrefixAnswer(c, where + ": a top_logprobs entry has no id and logprob", "pass --dialect");
    p.top.emplace_back(*id, *v);
  }
  SortTopK(p.top, k);
  for (size_t r = 0; r < p.top.size(); ++r) {
    if (p.top[r].first == token) p.rank = static_cast<int64_t>(r) + 1;
  }
  return p;
}

bool HasProbabilities(const json& reply) {
  return reply.is_object() && reply.contains("completion_probabilities") &&
         reply["completion_probabilities"].is_array() && !reply["completion_probabilities"].empty();
}

// n_probs that covers any vocabulary (the server lists min(this, vocabulary) entries).
constexpr int kWholeVocabulary = 1 << 24;

json PrefixRequest(std::span<const int32_t> ids, size_t i, int32_t forced, int n_probs, bool reuse_prefix) {
  // The prompt is ids[0..i] as ids (llama-server adds no BOS to a list of ids); the answer
  // predicts ids[i + 1]. A bias far above any logit makes greedy sampling pick `forced`.
  return {{"prompt", std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(i) + 1)},
          {"n_predict", 1},
          {"n_probs", n_probs},
          {"post_sampling_probs", false},
          {"cache_prompt", reuse_prefix},
          {"temperature", 0.0},
          {"samplers", {"temperature"}},
          {"logit_bias", json::array({json::array({forced, 1e6})})},
          {"stream", false}};
}

// The answer for a substitute token forced in place of `token` over the whole vocabulary: the
// entry for `token` read from the list, cut to the top k.
Expected<PromptPositionLogprobs> ReadSubstituted(const json& reply, int32_t token, int32_t substitute, int k,
                                                 const HttpClient& c, size_t pos) {
  KV_ASSIGN_OR_RETURN(PromptPositionLogprobs whole, ReadNext(reply, substitute, kWholeVocabulary, c, pos));
  PromptPositionLogprobs p;
  p.token = token, p.rank = 0;
  for (size_t r = 0; r < whole.top.size(); ++r) {
    if (whole.top[r].first == token) p.logprob = whole.top[r].second, p.rank = static_cast<int64_t>(r) + 1;
  }
  if (p.rank == 0) {
    return BadPrefixAnswer(c,
                           "position " + std::to_string(pos) + ": token " + std::to_string(token) +
                               " is not in the whole vocabulary's list",
                           "the server capped n_probs; pass --dialect");
  }
  whole.top.resize(std::min<size_t>(whole.top.size(), static_cast<size_t>(k)));
  p.top = std::move(whole.top);
  if (p.rank > k) p.rank = k + 1;  // as ReadNext reports a token outside the top k
  return p;
}

}  // namespace

Expected<std::vector<PromptPositionLogprobs>> RemoteBackend::PrefixLogprobs(std::span<const int32_t> ids, int k,
                                                                            size_t first, bool reuse_prefix) const {
  std::vector<PromptPositionLogprobs> out(ids.size() - 1);  // [ids.size() - 1]; before `first`: the token only
  for (size_t i = 0; i < out.size(); ++i) out[i].token = ids[i + 1];
  std::optional<int32_t> substitute;  // a token whose text is plain ASCII, once one is needed
  for (size_t i = first; i < out.size(); ++i) {
    KV_ASSIGN_OR_RETURN(json reply, client_.Post("/completion", PrefixRequest(ids, i, ids[i + 1], k, reuse_prefix)));
    if (HasProbabilities(reply)) {
      KV_ASSIGN_OR_RETURN(out[i], ReadNext(reply, ids[i + 1], k, client_, i + 1));
      continue;
    }
    if (!substitute) {
      const std::vector<int32_t> a = tok_.Encode("a", false, false);
      if (a.empty()) return BadPrefixAnswer(client_, "the tokenizer has no token for \"a\"", "pass --dialect");
      substitute = a[0];
    }
    KV_ASSIGN_OR_RETURN(
        reply, client_.Post("/completion", PrefixRequest(ids, i, *substitute, kWholeVocabulary, reuse_prefix)));
    KV_ASSIGN_OR_RETURN(out[i], ReadSubstituted(reply, ids[i + 1], *substitute, k, client_, i + 1));
  }
  return out;
}

}  // namespace kvaudit
