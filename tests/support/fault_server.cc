#include "support/fault_server.h"

#include <chrono>

namespace kvaudit::testing {

FaultStep Answer(int status, std::string body) {
  FaultStep s;
  s.status = status;
  s.body = std::move(body);
  return s;
}

FaultStep Sleep(double seconds) {
  FaultStep s;
  s.kind = FaultStep::kSleep;
  s.sleep_s = seconds;
  return s;
}

FaultStep Truncated() {
  FaultStep s;
  s.kind = FaultStep::kTruncated;
  s.body = R"({"choices": [{"text": "hel)";
  return s;
}

FaultStep Close() {
  FaultStep s;
  s.kind = FaultStep::kClose;
  return s;
}

int ServeOnLoopback(httplib::Server& http, std::thread& thread) {
  http.set_keep_alive_timeout(1);  // bounds how long the owner's stop waits on idle connections
  const int port = http.bind_to_any_port("127.0.0.1");
  thread = std::thread([&http] { http.listen_after_bind(); });
  for (int i = 0; i < 500 && !http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return port;
}

FaultServer::FaultServer(std::vector<FaultStep> script, FaultStep then)
    : script_(std::move(script)), then_(std::move(then)) {
  auto handler = [this](const httplib::Request& q, httplib::Response& r) { Handle(q, r); };
  http_.Get(".*", handler);
  http_.Post(".*", handler);
  port_ = ServeOnLoopback(http_, thread_);
}

FaultServer::~FaultServer() {
  http_.stop();
  if (thread_.joinable()) thread_.join();
}

std::string FaultServer::last_authorization() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_authorization_;
}

std::string FaultServer::last_body() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_body_;
}

void FaultServer::Handle(const httplib::Request& req, httplib::Response& res) {
  const int n = requests_++;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_authorization_ = req.get_header_value("Authorization");
    last_body_ = req.body;
  }
  const FaultStep& step = n < static_cast<int>(script_.size()) ? script_[static_cast<size_t>(n)] : then_;
  for (const auto& [k, v] : step.headers) res.set_header(k, v);
  if (step.kind == FaultStep::kSleep) std::this_thread::sleep_for(std::chrono::duration<double>(step.sleep_s));
  WriteFault(step, res);
}

void WriteFault(const FaultStep& step, httplib::Response& res) {
  if (step.kind == FaultStep::kClose) {
    res.set_content_provider(64, "application/json", [](size_t, size_t, httplib::DataSink& sink) {
      sink.write("{\"ok\": t", 8);
      return false;  // httplib drops the connection: the client reads 8 of 64 bytes
    });
    return;
  }
  res.status = step.status;  // kAnswer, kTruncated (its body is cut JSON), kSleep after its sleep
  res.set_content(step.body, "application/json");
}

}  // namespace kvaudit::testing
