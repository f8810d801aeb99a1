// What a page did that a browser test checks, gathered from the CDP events of its session and kept
// as one human-readable line each (what, then where), so a failing EXPECT prints the page's own
// words. Fed every event HeadlessChromium reads; knows nothing of pipes or processes.
//   console errors: Runtime.consoleAPICalled of type "error" or "assert", Runtime.exceptionThrown
//                   (an uncaught exception or rejected promise), Log.entryAdded of level "error"
//                   (the browser's own messages: a failed resource load, a CSP violation)
//   requests:       the URL of every Network.requestWillBeSent, in order (redirects included)
//   failed:         Network.loadingFailed, with the URL its requestWillBeSent announced
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvaudit::testing {

class CdpRecorder {
 public:
  // event: {"method": ..., "params": {...}} as CDP sends it; other methods are ignored.
  void Record(const nlohmann::json& event);
  void Clear();

  const std::vector<std::string>& console_errors() const { return console_errors_; }
  const std::vector<std::string>& requests() const { return requests_; }
  const std::vector<std::string>& failed_requests() const { return failed_requests_; }

 private:
  void OnConsoleApi(const nlohmann::json& params);
  void OnException(const nlohmann::json& params);
  void OnLogEntry(const nlohmann::json& params);
  void OnRequest(const nlohmann::json& params);
  void OnLoadingFailed(const nlohmann::json& params);

  std::vector<std::string> console_errors_, requests_, failed_requests_;
  std::map<std::string, std::string> url_by_request_;  // Network requestId -> its URL
};

}  // namespace kvaudit::testing
