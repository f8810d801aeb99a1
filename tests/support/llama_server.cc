#include "support/llama_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "endpoint/server_launch.h"

namespace kvaudit::testing {

std::filesystem::path LlamaCppTool(const std::string& tool) {
  const char* dir = std::getenv("KVAUDIT_LLAMACPP_BIN");
  if (!dir || !*dir) {
    ADD_FAILURE() << "KVAUDIT_LLAMACPP_BIN is not set; hint: run `make test` (it builds llama.cpp once with "
                     "scripts/build_llamacpp.sh), or export KVAUDIT_LLAMACPP_BIN=$(scripts/build_llamacpp.sh)";
    return {};
  }
  const std::filesystem::path p = std::filesystem::path(dir) / tool;
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << p << " is missing; hint: scripts/build_llamacpp.sh builds it";
    return {};
  }
  return p;
}

int FreeLoopbackPort() {
  const Expected<int> port = kvaudit::FreeLoopbackPort();  // endpoint/server_launch.h: what --serve-cmd uses
  return port ? *port : 0;
}

std::unique_ptr<LlamaServer> LlamaServer::Start(const std::vector<std::string>& args) {
  const std::filesystem::path bin = LlamaCppTool("llama-server");
  if (bin.empty()) return nullptr;
  auto s = std::unique_ptr<LlamaServer>(new LlamaServer());
  s->port_ = FreeLoopbackPort();
  std::vector<std::string> argv = {bin.string(), "--host", "127.0.0.1", "--port", std::to_string(s->port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  s->child_ = ChildProcess::Start(argv);
  if (!s->child_) return ADD_FAILURE() << "cannot start " << bin, nullptr;
  httplib::Client c("127.0.0.1", s->port_);
  c.set_connection_timeout(1, 0);
  c.set_read_timeout(5, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto r = c.Get("/health"); r && r->status == 200) return s;
    if (s->child_->WaitExit(0)) break;  // it exited: the stderr says why
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "llama-server on port " << s->port_ << " not healthy within 60 s; stderr: " << s->child_->Stderr();
  return nullptr;
}

}  // namespace kvaudit::testing
