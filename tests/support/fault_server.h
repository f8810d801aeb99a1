// A scriptable misbehaving HTTP server for the endpoint client's tests (endpoint/http_client.h):
// cpp-httplib on 127.0.0.1 with an OS-chosen port, served from a thread. Each request takes the
// next step of the script (every path alike); when the script is used up, `then` answers every
// request. Bounded: a sleep step sleeps its own fixed time, and the destructor stops and joins.
#pragma once

#include <httplib.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kvaudit::testing {

struct FaultStep {
  enum Kind {
    kAnswer,     // status + body (200 with JSON by default)
    kSleep,      // sleep sleep_s, then answer as kAnswer (a client with a shorter timeout gives up)
    kTruncated,  // 200 whose body is JSON cut short (Content-Length matches the cut body)
    kClose,      // headers promising 64 bytes, 8 sent, then the connection closed
  } kind = kAnswer;
  int status = 200;
  std::string body = R"({"ok": true})";
  double sleep_s = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
};

// Binds `http` to 127.0.0.1 on a free port and serves it from `thread` (joined by the owner after
// http.stop()); returns the port once the accept loop runs, since stop() is a no-op before that
// (httplib checks is_running()) and a destructor could then wait forever. Bounded: 5 s.
int ServeOnLoopback(httplib::Server& http, std::thread& thread);

// Writes a kAnswer, kTruncated or kClose step's response (a kSleep step's answer after its sleep).
void WriteFault(const FaultStep& step, httplib::Response& res);

FaultStep Answer(int status, std::string body);
FaultStep Sleep(double seconds);
FaultStep Truncated();
FaultStep Close();

class FaultServer {
 public:
  FaultServer(std::vector<FaultStep> script, FaultStep then);
  ~FaultServer();
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  int port() const { return port_; }
  int requests() const { return requests_.load(); }
  // The Authorization header of the latest request ("" when none).
  std::string last_authorization() const;
  // The body of the latest request.
  std::string last_body() const;

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);

  std::vector<FaultStep> script_;
  FaultStep then_;
  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  std::string last_authorization_, last_body_;
};

}  // namespace kvaudit::testing
