// Load on a running `kvaudit serve` (BENCHMARKS.md "kvaudit serve"): C concurrent clients, each
// sending R greedy /v1/completions of a prompt of T token ids (random ids from a fixed seed, so
// every run sends the same prompts) and max_tokens M. Prints requests/s and the p50/p99 latency,
// and fails (exit 1) if any response is missing, not 200, or not the completion asked for.
//   serve_load_bench PORT CLIENTS REQUESTS_PER_CLIENT PROMPT_TOKENS MAX_TOKENS
// Loopback only; every client's loop is bounded by REQUESTS_PER_CLIENT and a 600 s read timeout.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct ClientResult {
  std::vector<double> latency_s;  // [requests] of the answered ones
  int failures = 0;
};

std::string Body(int client, int request, int prompt_tokens, int max_tokens) {
  std::mt19937_64 rng(static_cast<uint64_t>(client) * 1000003u + static_cast<uint64_t>(request));
  nlohmann::json ids = nlohmann::json::array({0});  // BOS of the bundled model
  for (int i = 1; i < prompt_tokens; ++i) ids.push_back(static_cast<int>(1 + rng() % 8000));
  return nlohmann::json{{"prompt", ids}, {"max_tokens", max_tokens}, {"temperature", 0}}.dump();
}

ClientResult RunClient(int port, int client, int requests, int prompt_tokens, int max_tokens) {
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(600, 0);
  http.set_keep_alive(true);
  http.set_tcp_nodelay(true);
  ClientResult r;
  for (int i = 0; i < requests; ++i) {
    const std::string body = Body(client, i, prompt_tokens, max_tokens);
    const auto t0 = Clock::now();
    const auto res = http.Post("/v1/completions", body, "application/json");
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    bool ok = res && res->status == 200;
    if (ok) {
      const auto j = nlohmann::json::parse(res->body, nullptr, false);
      ok = !j.is_discarded() && j["usage"]["prompt_tokens"] == prompt_tokens;
    }
    if (ok) {
      r.latency_s.push_back(s);
    } else {
      ++r.failures;
    }
  }
  return r;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: serve_load_bench PORT CLIENTS REQUESTS_PER_CLIENT PROMPT_TOKENS MAX_TOKENS\n");
    return 2;
  }
  const int port = std::atoi(argv[1]), clients = std::atoi(argv[2]), requests = std::atoi(argv[3]);
  const int prompt_tokens = std::atoi(argv[4]), max_tokens = std::atoi(argv[5]);
  if (port <= 0 || clients < 1 || requests < 1 || prompt_tokens < 1 || max_tokens < 1) {
    std::fprintf(stderr, "serve_load_bench: every argument must be a positive integer\n");
    return 2;
  }
  std::vector<ClientResult> results(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back(
        [&, c] { results[static_cast<size_t>(c)] = RunClient(port, c, requests, prompt_tokens, max_tokens); });
  }
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  int failures = 0;
  for (const ClientResult& r : results) {
    all.insert(all.end(), r.latency_s.begin(), r.latency_s.end());
    failures += r.failures;
  }
  if (all.empty()) {
    std::fprintf(stderr, "serve_load_bench: no request answered\n");
    return 1;
  }
  std::printf("clients %d  requests %zu  prompt %d  max_tokens %d  req/s %.2f  p50 %.3f s  p99 %.3f s  failed %d\n",
              clients, all.size(), prompt_tokens, max_tokens, static_cast<double>(all.size()) / wall,
              Quantile(all, 0.5), Quantile(all, 0.99), failures);
  return failures == 0 ? 0 : 1;
}
