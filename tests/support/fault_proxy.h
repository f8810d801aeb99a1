// A misbehaving proxy in front of a real server (a `kvaudit serve`), for the endpoint faults of
// `kvaudit probe`/`eval` end to end (tests/cli/cli_endpoint_faults_test.cc): cpp-httplib on
// 127.0.0.1 with an OS-chosen port. Requests to `faulted_path` take the next step of the script
// (support/fault_server.h's steps, plus kForward); when the script is used up, `then` answers
// them. Every other path, and every kForward step, is passed to the upstream server and its
// answer returned as it came. Bounded: the upstream client times out after 120 s, a sleep step
// sleeps its own fixed time, and the destructor stops and joins.
#pragma once

#include <httplib.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_server.h"

namespace kvaudit::testing {

class FaultProxy {
 public:
  // A step that forwards (`std::nullopt` in the script) or misbehaves.
  using Step = std::optional<FaultStep>;
  FaultProxy(int upstream_port, std::string faulted_path, std::vector<Step> script, Step then);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  int faulted_requests() const { return faulted_.load(); }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);
  void Forward(const httplib::Request& req, httplib::Response& res) const;

  int upstream_port_;
  std::string faulted_path_;
  std::vector<Step> script_;
  Step then_;
  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> faulted_{0};
};

}  // namespace kvaudit::testing
