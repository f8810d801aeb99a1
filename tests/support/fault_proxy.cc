#include "support/fault_proxy.h"

#include <chrono>

namespace kvaudit::testing {

FaultProxy::FaultProxy(int upstream_port, std::string faulted_path, std::vector<Step> script, Step then)
    : upstream_port_(upstream_port),
      faulted_path_(std::move(faulted_path)),
      script_(std::move(script)),
      then_(std::move(then)) {
  auto handler = [this](const httplib::Request& q, httplib::Response& r) { Handle(q, r); };
  http_.Get(".*", handler);
  http_.Post(".*", handler);
  port_ = ServeOnLoopback(http_, thread_);
}

FaultProxy::~FaultProxy() {
  http_.stop();
  if (thread_.joinable()) thread_.join();
}

void FaultProxy::Forward(const httplib::Request& req, httplib::Response& res) const {
  httplib::Client up("127.0.0.1", upstream_port_);
  up.set_connection_timeout(10, 0);
  up.set_read_timeout(120, 0);
  httplib::Headers headers;
  if (req.has_header("Authorization")) headers.emplace("Authorization", req.get_header_value("Authorization"));
  const auto r = req.method == "GET" ? up.Get(req.path.c_str(), headers)
                                     : up.Post(req.path.c_str(), headers, req.body, "application/json");
  if (!r) {
    res.status = 502;
    res.set_content(R"({"error": {"message": "upstream unreachable"}})", "application/json");
    return;
  }
  res.status = r->status;
  res.set_content(r->body, r->get_header_value("Content-Type").empty() ? "application/json"
                                                                       : r->get_header_value("Content-Type").c_str());
}

void FaultProxy::Handle(const httplib::Request& req, httplib::Response& res) {
  if (req.path != faulted_path_) return Forward(req, res);
  const int n = faulted_++;
  const Step& step = n < static_cast<int>(script_.size()) ? script_[static_cast<size_t>(n)] : then_;
  if (!step) return Forward(req, res);
  if (step->kind == FaultStep::kSleep) {
    std::this_thread::sleep_for(std::chrono::duration<double>(step->sleep_s));
    return Forward(req, res);  // late: a client with a shorter timeout has given up
  }
  WriteFault(*step, res);
}

}  // namespace kvaudit::testing
