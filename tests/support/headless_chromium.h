// Real headless Chromium, driven over the Chrome DevTools Protocol (CDP) for the browser tests
// (tests/browser): load a page, run its script, collect what went wrong on it, take screenshots.
// The transport is --remote-debugging-pipe (support/pipe_process.h: NUL-terminated JSON on the
// browser's fds 3 and 4), so no websocket library, WebDriver or port is needed. The binary is
// $KVAUDIT_CHROMIUM, else /usr/bin/chromium (Debian's package `chromium`, scripts/setup.sh).
//
// One browser per object: a fresh profile (--user-data-dir in a temp dir) and one page, created
// with Target.createTarget and attached with flatten:true, so page commands carry its sessionId
// on the same pipe. Page, Runtime, Network and Log are enabled on that session at launch, and its
// viewport is set to kViewportWidth x kViewportHeight CSS pixels at device scale 1
// (Emulation.setDeviceMetricsOverride: headless's --window-size leaves room for window decorations
// that are not there, 1280x900 gave an 813 px high viewport in Chromium 156). Every
// call waits at most its timeout (30 s unless given); events read while waiting are kept
// (Events()) and the problems among them recorded (support/cdp_recorder.h).
// The destructor sends Browser.close, waits up to 5 s, then SIGKILLs Chromium's process group
// and its crash handlers (which leave the group) and reaps them all, and removes the temp dir:
// nothing of the browser outlives the object, not even a zombie.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/cdp_recorder.h"
#include "support/pipe_process.h"

namespace kvaudit::testing {

class HeadlessChromium {
 public:
  static constexpr std::chrono::milliseconds kTimeout{30000};
  static constexpr int kViewportWidth = 1280, kViewportHeight = 900;  // CSS pixels, also --window-size

  // nullptr with *error set (what failed, and the tail of Chromium's own log) when the binary is
  // missing or the browser does not come up. A test that needs the browser must fail then, not
  // skip: CI must not pass on nothing.
  static std::unique_ptr<HeadlessChromium> Launch(std::string* error);
  ~HeadlessChromium();
  HeadlessChromium(const HeadlessChromium&) = delete;
  HeadlessChromium& operator=(const HeadlessChromium&) = delete;

  // A command on the page's session; the reply's "result", or its "error" as the message.
  Expected<nlohmann::json> Send(const std::string& method, const nlohmann::json& params = nlohmann::json::object(),
                                std::chrono::milliseconds timeout = kTimeout);
  // A command to the browser itself (Browser.*, Target.*): no sessionId.
  Expected<nlohmann::json> SendToBrowser(const std::string& method,
                                         const nlohmann::json& params = nlohmann::json::object(),
                                         std::chrono::milliseconds timeout = kTimeout);

  // Page.navigate, then waits for the new document's Page.loadEventFired and one more task of the
  // page (so problems reported just after load, like an unhandled rejection, are recorded). A
  // navigation the browser refuses (errorText: net::ERR_FILE_NOT_FOUND, ...) is an error.
  Status Navigate(const std::string& url, std::chrono::milliseconds timeout = kTimeout);
  // Runtime.evaluate with returnByValue and awaitPromise: the value as JSON (undefined -> null).
  // A thrown exception or rejected promise is an error carrying its description.
  Expected<nlohmann::json> Evaluate(const std::string& js, std::chrono::milliseconds timeout = kTimeout);

  // The whole page as a PNG: the viewport is set to the content's CSS size for the capture and
  // restored after; device scale 1, so 1 PNG pixel = 1 CSS px.
  Status ScreenshotFullPage(const std::filesystem::path& png);
  // The first element matching css_selector, scrolled into view, clipped to its bounding box in
  // page coordinates at scale 1: the PNG has the element's CSS size (rounded by Chromium).
  Status ScreenshotElement(const std::string& css_selector, const std::filesystem::path& png);
  // loadEventEnd of the current document's PerformanceNavigationTiming, in ms since its
  // navigation started (waits for the load handlers to finish): for benchmarks.
  Expected<double> NavigationMs();

  // Recorded since launch or the last ClearRecorded(), one line each (support/cdp_recorder.h).
  const std::vector<std::string>& ConsoleErrors() const { return recorder_.console_errors(); }
  const std::vector<std::string>& FailedRequests() const { return recorder_.failed_requests(); }
  const std::vector<std::string>& Requests() const { return recorder_.requests(); }
  const std::vector<nlohmann::json>& Events() const { return events_; }  // every event, as read
  void ClearRecorded();

  pid_t Pid() const { return process_ ? process_->pid() : -1; }  // the browser (and group) id
  const std::filesystem::path& UserDataDir() const { return profile_dir_; }
  const std::string& Version() const { return version_; }  // Browser.getVersion's product
  std::string LogTail(size_t max_bytes = 2000) const;      // the end of Chromium's stdout+stderr

 private:
  HeadlessChromium() = default;
  Status Start();
  Status OpenPage(Clock::time_point deadline);
  Status SetViewport(int64_t width, int64_t height);  // CSS pixels, device scale 1
  Expected<nlohmann::json> Call(const std::string& method, const nlohmann::json& params, const std::string& session,
                                Clock::time_point deadline);
  // The index in events_ of the first event `method` at or after `from` for which match is true;
  // reads more messages until the deadline.
  Expected<size_t> WaitForEvent(const std::string& method, size_t from, Clock::time_point deadline,
                                const std::function<bool(const nlohmann::json& params)>& match = {});
  Status ReadInto(Clock::time_point deadline, int64_t awaited_id, nlohmann::json* reply);
  Expected<std::vector<uint8_t>> Capture(const nlohmann::json& params);

  std::unique_ptr<PipeProcess> process_;
  std::filesystem::path temp_dir_;     // holds profile/ and chromium.log
  std::filesystem::path profile_dir_;  // --user-data-dir
  std::string session_id_, version_;
  int64_t next_id_ = 1;
  std::vector<nlohmann::json> events_;
  CdpRecorder recorder_;
};

// Launch() for a test: records a gtest failure with the error when the browser does not start
// (never a skip), and returns nullptr then; ASSERT on the result.
std::unique_ptr<HeadlessChromium> LaunchChromiumOrFail();

}  // namespace kvaudit::testing
