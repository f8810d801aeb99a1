// JSON over HTTP to one endpoint, built to survive real networks (the policy is
// docs/endpoints.md "Retry policy"). Each call is bounded: at most max_attempts attempts and
// max_total_s seconds, waits between attempts on a fixed exponential schedule without jitter (the
// same run waits the same way; a fleet of kvaudit clients is not the case to spread), and every
// failure ends as one line naming the URL, what went wrong, how many attempts, and a hint.
//
// Transient, retried: connection refused or reset, connect/read timeouts, 5xx other than 501,
// 408, 429, and a 2xx whose body is not JSON (a truncated body from a crashing server or a proxy).
// Final, not retried: other 4xx and 501, quoting the server's error.message (OpenAI's
// {"error": {"message"}}, vLLM's older {"message"}), and TLS certificate failures.
//
// Thread safety: every call builds its own httplib::Client, so concurrent calls share nothing but
// the immutable spec, key and options. One client per call rather than per thread: a client holds
// one socket and serializes requests on it, a per-thread cache would need keying by endpoint and
// a lifetime story, and the cost is one TCP connect per call (tens of microseconds on loopback,
// one round trip elsewhere) against calls that generate for seconds. Attempts within a call reuse
// the call's client (cpp-httplib reconnects after a failed attempt).
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "endpoint/endpoint_spec.h"

namespace kvaudit {

struct HttpOptions {
  double timeout_s = 300;          // read and write timeout of one attempt
  double connect_timeout_s = 10;   // TCP (and TLS) connect of one attempt
  int max_attempts = 5;            // attempts per call, the first included
  double backoff_initial_s = 0.5;  // wait before the second attempt
  double backoff_max_s = 8;        // the longest wait
  double max_total_s = 900;        // one call, all attempts and waits together
};

// The waits before attempts 2..max_attempts: [max_attempts - 1] seconds, initial * 2^i capped at
// backoff_max. A 429 or 503 with a Retry-After of n seconds waits max(schedule, min(n, backoff_max)).
std::vector<double> BackoffSchedule(const HttpOptions& options);

class HttpClient {
 public:
  HttpClient(EndpointSpec spec, std::string api_key, HttpOptions options);

  Expected<nlohmann::json> Get(const std::string& path) const;
  Expected<nlohmann::json> Post(const std::string& path, const nlohmann::json& body) const;
  // As Get/Post, but a 404 or 405 (an endpoint this server does not have) is nullopt, not an error:
  // for probing what a server offers (endpoint/dialect.h).
  Expected<std::optional<nlohmann::json>> GetIfPresent(const std::string& path) const;
  Expected<std::optional<nlohmann::json>> PostIfPresent(const std::string& path, const nlohmann::json& body) const;

  // A text document (Prometheus /metrics), one attempt within the timeouts: the body of a 2xx,
  // nullopt for any other answer or none (what a server does not offer is not an error here).
  std::optional<std::string> GetTextOnce(const std::string& path) const;

  const EndpointSpec& spec() const { return spec_; }
  const HttpOptions& options() const { return options_; }
  // Attempts made by every call so far (tests read it to see retries happen, and stop).
  int64_t attempts() const { return attempts_->load(); }

 private:
  // missing: nullptr = a 404/405 is an error; else set true on a 404/405 (the value is then null).
  Expected<nlohmann::json> Call(const std::string& path, const nlohmann::json* body, bool* missing) const;

  EndpointSpec spec_;
  std::string api_key_;
  HttpOptions options_;
  // Shared by moved-from copies so the client stays movable; counted by every call.
  std::shared_ptr<std::atomic<int64_t>> attempts_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace kvaudit
