#include "support/headless_chromium.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "support/fixtures.h"

namespace kvaudit::testing {
namespace {

using nlohmann::json;

// Chromium's switches, each for a reason:
constexpr const char* kFlags[] = {
    "--headless=new",                   // the real browser without a display (not the old headless shell)
    "--no-sandbox",                     // the sandbox refuses to start as root, and CI runs as root
    "--disable-gpu",                    // no GPU process: software rendering, the same pixels everywhere
    "--disable-background-networking",  // no traffic of its own: every request in Requests() is the page's
    "--disable-component-update",       // no downloads of updatable components
    "--disable-sync",                   // no account sync
    "--no-first-run",                   // no first-run dialogs or tabs
    "--no-default-browser-check",       // no "make Chromium the default" prompt
    "--remote-debugging-pipe",          // CDP on fds 3 and 4 (support/pipe_process.h)
    "--hide-scrollbars",                // screenshots without scrollbars, so their width is the page's
    "--window-size=1280,900",           // a fixed window; OpenPage sets the viewport to exactly this
};
static_assert(HeadlessChromium::kViewportWidth == 1280 && HeadlessChromium::kViewportHeight == 900);

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// The binary and where its path came from, for the error message. Debian's /usr/bin/chromium is
// a shell script that execs /usr/lib/chromium/chromium under the same pid, adding flags from
// /etc/chromium.d (--enable-gpu-rasterization, --disable-pings, --enable-remote-extensions, ...):
// none changes what the tests see, and it is the command a user of the package runs.
std::pair<std::string, std::string> ChromiumPath() {
  if (const char* env = std::getenv("KVAUDIT_CHROMIUM"); env && *env) return {env, "from $KVAUDIT_CHROMIUM"};
  return {"/usr/bin/chromium", "the default; set KVAUDIT_CHROMIUM to use another"};
}

}  // namespace

std::unique_ptr<HeadlessChromium> HeadlessChromium::Launch(std::string* error) {
  std::unique_ptr<HeadlessChromium> browser(new HeadlessChromium());
  if (Status s = browser->Start(); !s.ok()) {
    if (error) {
      *error = "cannot launch headless chromium: " + s.error().message;
      if (browser->process_) *error += "; chromium's log ends: " + browser->LogTail();
    }
    return nullptr;  // the destructor stops what did start and removes the temp dir
  }
  return browser;
}

std::unique_ptr<HeadlessChromium> LaunchChromiumOrFail() {
  std::string error;
  auto browser = HeadlessChromium::Launch(&error);
  if (!browser) ADD_FAILURE() << error;
  return browser;
}

Status HeadlessChromium::Start() {
  const auto [binary, source] = ChromiumPath();
  if (access(binary.c_str(), X_OK) != 0) {
    return BadInput("chromium not found: " + binary + " is not an executable file (" + source +
                    "); install Debian's package chromium (scripts/setup.sh)");
  }
  temp_dir_ = MakeTempDir("chromium");
  profile_dir_ = temp_dir_ / "profile";
  std::filesystem::create_directories(profile_dir_);
  std::vector<std::string> argv{binary};
  argv.insert(argv.end(), std::begin(kFlags), std::end(kFlags));
  argv.push_back("--user-data-dir=" + profile_dir_.string());
  PipeSpawn spawn{argv, {}, temp_dir_ / "chromium.log", temp_dir_.string() + "/"};
  // What Chromium keeps outside the profile (the crash handler's database) goes under
  // $XDG_CONFIG_HOME/chromium, else $HOME/.config/chromium: here, into the temp dir, so the run
  // writes nothing elsewhere and the crash handler, which leaves the process group (setsid), names
  // the temp dir on its command line for Stop() to find. --disable-crashpad-for-testing is no way
  // out: Chromium 156's network service then crashes ("FD ownership violation") over and over.
  spawn.env.push_back("XDG_CONFIG_HOME=" + (temp_dir_ / "config").string());
  KV_ASSIGN_OR_RETURN(process_, PipeProcess::Spawn(spawn));
  const auto deadline = Clock::now() + kTimeout;
  KV_ASSIGN_OR_RETURN(const json version, Call("Browser.getVersion", json::object(), "", deadline));
  version_ = Str(version, "product");
  KV_RETURN_IF_ERROR(OpenPage(deadline));
  process_->FindStrays();  // the crash handlers, started with the browser
  return Status::Ok();
}

Status HeadlessChromium::OpenPage(Clock::time_point deadline) {
  KV_ASSIGN_OR_RETURN(const json target, Call("Target.createTarget", {{"url", "about:blank"}}, "", deadline));
  const json attach = {{"targetId", Str(target, "targetId")}, {"flatten", true}};
  KV_ASSIGN_OR_RETURN(const json attached, Call("Target.attachToTarget", attach, "", deadline));
  session_id_ = Str(attached, "sessionId");
  if (session_id_.empty()) return Internal("Target.attachToTarget gave no sessionId: " + attached.dump());
  for (const char* domain : {"Page", "Runtime", "Network", "Log"}) {
    KV_RETURN_IF_ERROR(Call(std::string(domain) + ".enable", json::object(), session_id_, deadline));
  }
  return SetViewport(kViewportWidth, kViewportHeight);
}

Status HeadlessChromium::SetViewport(int64_t width, int64_t height) {
  const json metrics = {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", false}};
  KV_RETURN_IF_ERROR(Send("Emulation.setDeviceMetricsOverride", metrics));
  return Status::Ok();
}

HeadlessChromium::~HeadlessChromium() {
  if (process_ && !process_->stopped()) {
    // Browser.close lets Chromium shut its helpers down; the group kill in Stop() is the backstop.
    (void)Call("Browser.close", json::object(), "", Clock::now() + std::chrono::seconds(5));
    process_->Stop(std::chrono::seconds(5));
  }
  std::error_code ec;
  if (!temp_dir_.empty()) std::filesystem::remove_all(temp_dir_, ec);
}

Expected<json> HeadlessChromium::Send(const std::string& method, const json& params,
                                      std::chrono::milliseconds timeout) {
  return Call(method, params, session_id_, Clock::now() + timeout);
}

Expected<json> HeadlessChromium::SendToBrowser(const std::string& method, const json& params,
                                               std::chrono::milliseconds timeout) {
  return Call(method, params, "", Clock::now() + timeout);
}

Expected<json> HeadlessChromium::Call(const std::string& method, const json& params, const std::string& session,
                                      Clock::time_point deadline) {
  if (!process_ || process_->stopped()) return Internal(method + ": the browser is not running");
  const int64_t id = next_id_++;
  json message = {{"id", id}, {"method", method}, {"params", params}};
  if (!session.empty()) message["sessionId"] = session;
  // replace: a test's bad UTF-8 becomes U+FFFD instead of a throw
  if (Status s = process_->Write(message.dump(-1, ' ', false, json::error_handler_t::replace), deadline); !s.ok()) {
    return Internal(method + ": " + s.error().message);
  }
  json reply;
  while (reply.is_null()) {
    if (Status s = ReadInto(deadline, id, &reply); !s.ok()) return Internal(method + ": " + s.error().message);
  }
  if (reply.contains("error")) {
    const json& e = reply["error"];
    return BadInput(method + ": " + Str(e, "message") + " (CDP error " + e.value("code", json()).dump() + ")");
  }
  return reply.value("result", json::object());
}

// Reads one message: the awaited reply goes to *reply, an event to events_ and the recorder; the
// reply to a call that timed out earlier is dropped.
Status HeadlessChromium::ReadInto(Clock::time_point deadline, int64_t awaited_id, json* reply) {
  KV_ASSIGN_OR_RETURN(const std::string text, process_->Read(deadline));
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object()) return Internal("not a JSON object from the browser: " + text.substr(0, 200));
  if (message.contains("id")) {
    if (message["id"] == awaited_id) *reply = std::move(message);
    return Status::Ok();
  }
  recorder_.Record(message);
  events_.push_back(std::move(message));
  return Status::Ok();
}

Expected<size_t> HeadlessChromium::WaitForEvent(const std::string& method, size_t from, Clock::time_point deadline,
                                                const std::function<bool(const json& params)>& match) {
  for (size_t i = from;; ++i) {
    while (i >= events_.size()) {
      if (!process_ || process_->stopped()) return Internal("waiting for " + method + ": the browser is not running");
      json unused;
      if (Status s = ReadInto(deadline, /*awaited_id=*/-1, &unused); !s.ok()) {
        return Internal("waiting for " + method + ": " + s.error().message);
      }
    }
    const json& e = events_[i];
    if (Str(e, "method") == method && (!match || match(e.value("params", json::object())))) return i;
  }
}

Status HeadlessChromium::Navigate(const std::string& url, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const size_t mark = events_.size();
  KV_ASSIGN_OR_RETURN(const json nav, Call("Page.navigate", {{"url", url}}, session_id_, deadline));
  if (const std::string e = Str(nav, "errorText"); !e.empty())
    return BadInput("navigation to " + url + " failed: " + e);
  const std::string loader = Str(nav, "loaderId");
  if (loader.empty()) return Status::Ok();  // a same-document navigation (#fragment): nothing loads
  // The load event must be the new document's: find its commit (the main frame navigated with
  // this loaderId) first, so a late load event of the previous document cannot pass for it.
  KV_ASSIGN_OR_RETURN(const size_t committed, WaitForEvent("Page.frameNavigated", mark, deadline, [&](const json& p) {
                        const json frame = p.value("frame", json::object());
                        return Str(frame, "loaderId") == loader && !frame.contains("parentId");
                      }));
  KV_RETURN_IF_ERROR(WaitForEvent("Page.loadEventFired", committed + 1, deadline));
  // One more turn of the page's event loop: Chromium reports an unhandled promise rejection from
  // a task after the one that rejected, which can come after the load event.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  KV_RETURN_IF_ERROR(
      Evaluate("new Promise(done => setTimeout(done, 0))", std::max(left, std::chrono::milliseconds(1))));
  return Status::Ok();
}

Expected<json> HeadlessChromium::Evaluate(const std::string& js, std::chrono::milliseconds timeout) {
  const json params = {{"expression", js}, {"returnByValue", true}, {"awaitPromise", true}};
  KV_ASSIGN_OR_RETURN(const json r, Call("Runtime.evaluate", params, session_id_, Clock::now() + timeout));
  if (r.contains("exceptionDetails")) {
    const json& d = r["exceptionDetails"];
    std::string what = Str(d.value("exception", json::object()), "description");
    return BadInput("Evaluate threw: " + (what.empty() ? Str(d, "text") : what));
  }
  const json result = r.value("result", json::object());
  return result.contains("value") ? result["value"] : json();  // undefined has no value
}

void HeadlessChromium::ClearRecorded() {
  recorder_.Clear();
  events_.clear();
}

std::string HeadlessChromium::LogTail(size_t max_bytes) const {
  // Without a D-Bus (containers, CI) Chromium logs a dbus/ error line on every start; they would
  // push what matters out of the tail.
  std::ifstream in(temp_dir_ / "chromium.log");
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.find("dbus/") == std::string::npos) kept += line + "\n";
  }
  return kept.size() > max_bytes ? "..." + kept.substr(kept.size() - max_bytes) : kept;
}

}  // namespace kvaudit::testing
