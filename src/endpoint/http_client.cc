#include "endpoint/http_client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace kvaudit {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// One attempt's verdict.
struct Attempt {
  enum Kind { kOk, kMissing, kTransient, kFinal } kind = kTransient;
  json body;
  std::string what;    // "HTTP 500", "malformed JSON", "connection failed"
  std::string detail;  // " (first 80 bytes: ...)", the server's message quoted
  std::string hint;
  double retry_after_s = 0;  // the server's Retry-After, 0 when none
};

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

// Bytes fit for one line of an error: printable ASCII kept, the rest as \xNN.
std::string Printable(std::string_view s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// The server's own words: OpenAI's and llama-server's {"error": {"message"}}, vLLM's older
// ErrorResponse {"message"}, FastAPI's {"detail"}; else the body's first bytes.
std::string ServerMessage(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string()) return (*e)["message"];
      if (e->is_string()) return *e;
    }
    for (const char* key : {"message", "detail"}) {
      if (auto m = j.find(key); m != j.end() && m->is_string()) return *m;
    }
  }
  return body;
}

double RetryAfter(const httplib::Response& r) {
  const std::string v = r.get_header_value("Retry-After");
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6) return 0;
  return std::stod(v);
}

Attempt FromStatus(const httplib::Response& r, const std::string& path, bool missing_ok) {
  Attempt a;
  const int s = r.status;
  if (s >= 200 && s < 300) {
    a.body = json::parse(r.body, nullptr, false);
    if (!a.body.is_discarded()) return a.kind = Attempt::kOk, a;
    a.what = "malformed JSON";
    a.detail = " (first 80 bytes: " + Printable(r.body, 80) + ")";
    a.hint = "the body was cut short or is not JSON: a crashing server, or a proxy in front of it; check the URL";
    return a;
  }
  if (missing_ok && (s == 404 || s == 405)) return a.kind = Attempt::kMissing, a;
  a.what = "HTTP " + std::to_string(s);
  a.detail = ": '" + Printable(ServerMessage(r.body), 200) + "'";
  const bool transient = (s >= 500 && s != 501) || s == 408 || s == 429;
  a.kind = transient ? Attempt::kTransient : Attempt::kFinal;
  if (s == 429 || s == 503) a.retry_after_s = RetryAfter(r);
  a.hint = transient              ? "the server keeps failing or is overloaded; see its log, or retry later"
           : s == 401 || s == 403 ? "check the API key (KVAUDIT_API_KEY, --api-key-env or --api-key-file)"
           : s == 404             ? "the server has no " + path + "; check the URL's base path and --dialect"
           : s >= 300 && s < 400  ? "the server redirects; give the final URL"
                                  : "the server refused the request; check --dialect and the model's limits";
  return a;
}

Attempt FromError(httplib::Error e, const HttpOptions& o, const EndpointSpec& spec) {
  Attempt a;
  a.detail = " (" + httplib::to_string(e) + ")";
  if (e == httplib::Error::SSLServerVerification || e == httplib::Error::SSLLoadingCerts) {
    a.kind = Attempt::kFinal;
    a.what = "TLS certificate not accepted";
    a.hint = "the server's certificate must verify against the system's CA store";
    return a;
  }
  if (e == httplib::Error::Read) {
    a.what = "no complete response within " + Seconds(o.timeout_s);
    a.hint = "the server is slow, hung or dropped the connection; see its log";
  } else {
    a.what = "cannot connect";
    a.hint = "is the server running at " + spec.origin() + "?";
  }
  return a;
}

void ConfigureSocket(httplib::Client& c, double read_s, double connect_s) {
  auto split = [](double s) {
    const double clamped = std::max(s, 0.001);
    const auto whole = static_cast<time_t>(clamped);
    return std::pair<time_t, time_t>(whole, static_cast<time_t>((clamped - static_cast<double>(whole)) * 1e6));
  };
  const auto [rs, ru] = split(read_s);
  const auto [cs, cu] = split(connect_s);
  c.set_read_timeout(rs, ru);
  c.set_write_timeout(rs, ru);
  c.set_connection_timeout(cs, cu);
  c.set_tcp_nodelay(true);  // a request's headers and body are separate sends: no Nagle wait (serve/server.cc)
}

}  // namespace

std::vector<double> BackoffSchedule(const HttpOptions& o) {
  std::vector<double> waits;
  double w = o.backoff_initial_s;
  for (int i = 1; i < o.max_attempts; ++i) {
    waits.push_back(std::min(w, o.backoff_max_s));
    w *= 2;
  }
  return waits;
}

HttpClient::HttpClient(EndpointSpec spec, std::string api_key, HttpOptions options)
    : spec_(std::move(spec)), api_key_(std::move(api_key)), options_(options) {}

Expected<nlohmann::json> HttpClient::Get(const std::string& path) const { return Call(path, nullptr, nullptr); }

Expected<nlohmann::json> HttpClient::Post(const std::string& path, const nlohmann::json& body) const {
  return Call(path, &body, nullptr);
}

namespace {

Expected<std::optional<nlohmann::json>> IfPresent(Expected<nlohmann::json> r, bool missing) {
  if (!r.ok()) return r.error();
  if (missing) return std::optional<nlohmann::json>();
  return std::optional<nlohmann::json>(std::move(r).value());
}

}  // namespace

Expected<std::optional<nlohmann::json>> HttpClient::GetIfPresent(const std::string& path) const {
  bool missing = false;
  Expected<nlohmann::json> r = Call(path, nullptr, &missing);
  return IfPresent(std::move(r), missing);
}

Expected<std::optional<nlohmann::json>> HttpClient::PostIfPresent(const std::string& path,
                                                                  const nlohmann::json& body) const {
  bool missing = false;
  Expected<nlohmann::json> r = Call(path, &body, &missing);
  return IfPresent(std::move(r), missing);
}

std::optional<std::string> HttpClient::GetTextOnce(const std::string& path) const {
  httplib::Client client(spec_.origin());
  if (!api_key_.empty()) client.set_bearer_token_auth(api_key_.c_str());
  ConfigureSocket(client, options_.timeout_s, options_.connect_timeout_s);
  ++*attempts_;
  const httplib::Result r = client.Get((spec_.base_path + path).c_str());
  if (!r || r->status < 200 || r->status >= 300) return std::nullopt;
  return r->body;
}

Expected<nlohmann::json> HttpClient::Call(const std::string& path, const nlohmann::json* body, bool* missing) const {
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.max_total_s));
  const std::vector<double> waits = BackoffSchedule(options_);
  const std::string full_path = spec_.base_path + path;
  const std::string payload = body ? body->dump() : "";
  httplib::Client client(spec_.origin());
  if (!api_key_.empty()) client.set_bearer_token_auth(api_key_.c_str());
  Attempt last;
  int made = 0;
  std::string limit_note;
  for (int i = 0; i < options_.max_attempts; ++i) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) {
      limit_note = " (call limit " + Seconds(options_.max_total_s) + ")";
      break;
    }
    ConfigureSocket(client, std::min(options_.timeout_s, left), std::min(options_.connect_timeout_s, left));
    ++made;
    ++*attempts_;
    httplib::Result r =
        body ? client.Post(full_path.c_str(), payload, "application/json") : client.Get(full_path.c_str());
    last = r ? FromStatus(*r, path, missing != nullptr) : FromError(r.error(), options_, spec_);
    if (last.kind == Attempt::kOk) return std::move(last.body);
    if (last.kind == Attempt::kMissing) return *missing = true, nlohmann::json();
    if (last.kind == Attempt::kFinal) break;
    if (i + 1 == options_.max_attempts) break;
    double wait = waits[static_cast<size_t>(i)];
    if (last.retry_after_s > 0) wait = std::max(wait, std::min(last.retry_after_s, options_.backoff_max_s));
    const auto wake = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
    if (wake >= deadline) {
      limit_note = " (call limit " + Seconds(options_.max_total_s) + ")";
      break;
    }
    std::this_thread::sleep_until(wake);
  }
  const std::string attempts = last.kind == Attempt::kFinal && made == 1
                                   ? ""
                                   : " after " + std::to_string(made) + (made == 1 ? " attempt" : " attempts");
  return BadInput(spec_.Url(path) + ": " + last.what + attempts + limit_note + last.detail + "; hint: " + last.hint);
}

}  // namespace kvaudit
