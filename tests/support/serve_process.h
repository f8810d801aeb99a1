// `kvaudit serve` as a test runs it: the built binary on the bundled model with --port 0, the
// port read from its "listening on" line (bounded wait), and a cpp-httplib client for it
// (127.0.0.1 only, bounded timeouts). The child is killed when this goes out of scope.
#pragma once

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace kvaudit::testing {

struct HttpReply {
  int status = -1;  // -1: no response (connection refused or reset, timeout)
  std::string body;
  nlohmann::json json;  // the body parsed, discarded when it is not JSON
};

class ServeProcess {
 public:
  // args: the flags after `serve` (--model, --port 0 and --threads 2 are added unless given).
  // nullptr (with a gtest failure holding its stderr) when it does not print its port in 60 s.
  static std::unique_ptr<ServeProcess> Start(const std::vector<std::string>& args);

  int port() const { return port_; }
  ChildProcess& child() { return *child_; }

  HttpReply Get(const std::string& path, const httplib::Headers& headers = {}) const;
  HttpReply Post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const;
  HttpReply Post(const std::string& path, const nlohmann::json& body, const httplib::Headers& headers = {}) const {
    return Post(path, body.dump(), headers);
  }

 private:
  std::unique_ptr<ChildProcess> child_;
  int port_ = 0;
};

}  // namespace kvaudit::testing
