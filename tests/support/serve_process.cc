#include "support/serve_process.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/fixtures.h"

namespace kvaudit::testing {
namespace {

bool Has(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

HttpReply ToReply(const httplib::Result& r) {
  HttpReply out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.json = nlohmann::json::parse(r->body, nullptr, false);
  return out;
}

httplib::Client MakeClient(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(120, 0);
  c.set_write_timeout(30, 0);
  return c;
}

}  // namespace

std::unique_ptr<ServeProcess> ServeProcess::Start(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {KvauditBinary().string(), "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!Has(args, "--model")) argv.insert(argv.end(), {"--model", BundledModelDir().string()});
  if (!Has(args, "--port")) argv.insert(argv.end(), {"--port", "0"});
  if (!Has(args, "--threads")) argv.insert(argv.end(), {"--threads", "2"});
  auto p = std::unique_ptr<ServeProcess>(new ServeProcess());
  p->child_ = ChildProcess::Start(argv);
  if (!p->child_) return ADD_FAILURE() << "cannot start kvaudit serve", nullptr;
  const std::string prefix = "kvaudit serve: listening on http://127.0.0.1:";
  const auto line = p->child_->ReadLine(60'000);
  if (!line || line->rfind(prefix, 0) != 0) {
    ADD_FAILURE() << "no listening line (got '" << line.value_or("<none>") << "'); stderr: " << p->child_->Stderr();
    return nullptr;
  }
  p->port_ = std::stoi(line->substr(prefix.size()));
  return p;
}

HttpReply ServeProcess::Get(const std::string& path, const httplib::Headers& headers) const {
  httplib::Client c = MakeClient(port_);
  return ToReply(c.Get(path, headers));
}

HttpReply ServeProcess::Post(const std::string& path, const std::string& body, const httplib::Headers& headers) const {
  httplib::Client c = MakeClient(port_);
  return ToReply(c.Post(path, headers, body, "application/json"));
}

}  // namespace kvaudit::testing
