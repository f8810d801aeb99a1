// llama.cpp's own llama-server as a test runs it: the binary from scripts/build_llamacpp.sh (built
// outside the repository, cached; `make test` passes its directory in KVAUDIT_LLAMACPP_BIN), on a
// free loopback port, ready once GET /health answers 200 (bounded wait). The child is killed when
// this goes out of scope. A missing binary is a test failure, never a skip.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace kvaudit::testing {

// KVAUDIT_LLAMACPP_BIN/<tool>; a gtest failure (with the hint) and an empty path when it is unset
// or the tool is not there.
std::filesystem::path LlamaCppTool(const std::string& tool);

class LlamaServer {
 public:
  // args: the flags after the binary (-m, -c, -ctk ...); --host 127.0.0.1 and --port are added.
  // nullptr (with a gtest failure holding its stderr) when /health is not 200 within 60 s.
  static std::unique_ptr<LlamaServer> Start(const std::vector<std::string>& args);

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  ChildProcess& child() { return *child_; }

 private:
  std::unique_ptr<ChildProcess> child_;
  int port_ = 0;
};

// A loopback TCP port nothing listens on right now (bound to 0 and released).
int FreeLoopbackPort();

}  // namespace kvaudit::testing
