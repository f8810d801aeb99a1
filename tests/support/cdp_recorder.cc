#include "support/cdp_recorder.h"

namespace kvaudit::testing {
namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// A Runtime.RemoteObject as console.log would print it: a string as is, another primitive as
// JSON, an object by its description ("Error: boom", "Array(3)").
std::string RemoteObjectText(const json& o) {
  if (o.contains("value")) return o["value"].is_string() ? o["value"].get<std::string>() : o["value"].dump();
  if (o.contains("unserializableValue")) return Str(o, "unserializableValue");  // NaN, 1n, -0
  if (o.contains("description")) return Str(o, "description");
  return Str(o, "type");
}

// " (url:line:column)" from 0-based CDP positions; "" when there is no URL.
std::string Where(const std::string& url, const json& line, const json& column) {
  if (url.empty()) return "";
  std::string s = " (" + url;
  if (line.is_number_integer()) s += ":" + std::to_string(line.get<int64_t>() + 1);
  if (column.is_number_integer()) s += ":" + std::to_string(column.get<int64_t>() + 1);
  return s + ")";
}

}  // namespace

void CdpRecorder::Record(const json& event) {
  const std::string method = Str(event, "method");
  const json params = event.value("params", json::object());
  if (method == "Runtime.consoleAPICalled")
    OnConsoleApi(params);
  else if (method == "Runtime.exceptionThrown")
    OnException(params);
  else if (method == "Log.entryAdded")
    OnLogEntry(params);
  else if (method == "Network.requestWillBeSent")
    OnRequest(params);
  else if (method == "Network.loadingFailed")
    OnLoadingFailed(params);
}

void CdpRecorder::Clear() {
  console_errors_.clear();
  requests_.clear();
  failed_requests_.clear();
  url_by_request_.clear();
}

void CdpRecorder::OnConsoleApi(const json& params) {
  const std::string type = Str(params, "type");
  if (type != "error" && type != "assert") return;
  std::string text;
  for (const json& arg : params.value("args", json::array())) text += (text.empty() ? "" : " ") + RemoteObjectText(arg);
  const json frames = params.value("stackTrace", json::object()).value("callFrames", json::array());
  const json top = frames.empty() ? json::object() : frames[0];
  console_errors_.push_back("console." + type + ": " + text +
                            Where(Str(top, "url"), top.value("lineNumber", json()), top.value("columnNumber", json())));
}

void CdpRecorder::OnException(const json& params) {
  const json d = params.value("exceptionDetails", json::object());
  // exception.description holds the message and stack ("Error: boom\n    at f (...)"); text alone
  // is only "Uncaught".
  std::string what = Str(d.value("exception", json::object()), "description");
  if (what.empty()) what = RemoteObjectText(d.value("exception", json::object()));
  what = Str(d, "text") + (what.empty() ? "" : " " + what);
  console_errors_.push_back("exception: " + what +
                            Where(Str(d, "url"), d.value("lineNumber", json()), d.value("columnNumber", json())));
}

void CdpRecorder::OnLogEntry(const json& params) {
  const json e = params.value("entry", json::object());
  if (Str(e, "level") != "error") return;
  console_errors_.push_back("log " + Str(e, "source") + ": " + Str(e, "text") +
                            Where(Str(e, "url"), e.value("lineNumber", json()), json()));
}

void CdpRecorder::OnRequest(const json& params) {
  const std::string url = Str(params.value("request", json::object()), "url");
  requests_.push_back(url);
  url_by_request_[Str(params, "requestId")] = url;  // a redirect reuses the id: the latest URL wins
}

void CdpRecorder::OnLoadingFailed(const json& params) {
  const auto it = url_by_request_.find(Str(params, "requestId"));
  std::string line =
      (it == url_by_request_.end() ? "(unannounced request)" : it->second) + ": " + Str(params, "errorText");
  if (const std::string blocked = Str(params, "blockedReason"); !blocked.empty()) line += " (blocked: " + blocked + ")";
  if (params.value("canceled", false)) line += " (canceled)";
  failed_requests_.push_back(line);
}

}  // namespace kvaudit::testing
