// support/headless_chromium.h against real headless Chromium: pages written into a temp dir are
// loaded over file://, and what the harness reports about them (console errors, requests,
// screenshots, values read back) is checked against what each page was written to do. Chromium
// missing is a failure here (LaunchChromiumOrFail), never a skip.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "support/base64.h"
#include "support/fixtures.h"
#include "support/headless_chromium.h"
#include "support/html_strict.h"
#include "support/png_info.h"

namespace kvaudit::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// Writes dir/name and returns its file:// URL.
std::string WriteFile(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return "file://" + (dir / name).string();
}

std::string Page(const std::string& head, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>t</title>" + head +
         "</head>\n<body style=\"margin: 0\">" + body + "</body></html>\n";
}

bool Contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(HeadlessChromium, CleanPageHasNoProblemsAndOnlyLocalRequests) {
  const fs::path dir = MakeTempDir("browser");
  WriteFile(dir, "style.css", "#out { color: rgb(1, 2, 3) }\n");
  WriteFile(dir, "app.js", "document.getElementById('out').textContent = String(6 * 7);\n");
  const std::string html = Page("<link rel=\"stylesheet\" href=\"style.css\">",
                                "<p id=\"out\">-</p><img alt=\"\" src=\"data:image/svg+xml,"
                                "%3Csvg xmlns='http://www.w3.org/2000/svg' width='4' height='4'/%3E\">"
                                "<script src=\"app.js\"></script>");
  ASSERT_EQ(Join(HtmlParseErrors(html)), "");  // the page itself is strict HTML
  const std::string url = WriteFile(dir, "index.html", html);
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  EXPECT_NE(browser->Version().find("Chrome/"), std::string::npos) << browser->Version();
  const Status nav = browser->Navigate(url);
  ASSERT_TRUE(nav.ok()) << nav.error().message;
  EXPECT_EQ(Join(browser->ConsoleErrors()), "");
  EXPECT_EQ(Join(browser->FailedRequests()), "");
  for (const auto& r : browser->Requests()) {
    EXPECT_TRUE(r.rfind("file://", 0) == 0 || r.rfind("data:", 0) == 0) << r;
  }
  EXPECT_TRUE(Contains(browser->Requests(), url));
  EXPECT_TRUE(Contains(browser->Requests(), "file://" + (dir / "app.js").string()));
  EXPECT_TRUE(Contains(browser->Requests(), "file://" + (dir / "style.css").string()));
  auto text = browser->Evaluate("document.getElementById('out').textContent");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "42");
  auto color = browser->Evaluate("getComputedStyle(document.getElementById('out')).color");
  ASSERT_TRUE(color.ok()) << color.error().message;
  EXPECT_EQ(*color, "rgb(1, 2, 3)");  // the stylesheet applied
  auto size = browser->Evaluate("[window.innerWidth, window.innerHeight]");
  ASSERT_TRUE(size.ok()) << size.error().message;
  EXPECT_EQ(*size, json::array({HeadlessChromium::kViewportWidth, HeadlessChromium::kViewportHeight}));
  auto ms = browser->NavigationMs();
  ASSERT_TRUE(ms.ok()) << ms.error().message;
  EXPECT_GT(*ms, 0.0);
  EXPECT_LT(*ms, 30000.0);
  fs::remove_all(dir);
}

TEST(HeadlessChromium, FullPageScreenshotCoversTallContent) {
  const fs::path dir = MakeTempDir("browser");
  const std::string url =
      WriteFile(dir, "tall.html", Page("", "<div style=\"height: 3000px; background: #eee\">tall</div>"));
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->Navigate(url).ok());
  const Status shot = browser->ScreenshotFullPage(dir / "full.png");
  ASSERT_TRUE(shot.ok()) << shot.error().message;
  const auto png = ReadPngSize(ReadBytes(dir / "full.png"));
  ASSERT_TRUE(png.has_value()) << "not a PNG";
  EXPECT_GE(png->height, 3000u);
  EXPECT_EQ(png->width, static_cast<uint32_t>(HeadlessChromium::kViewportWidth));
  auto height = browser->Evaluate("window.innerHeight");  // the viewport was restored
  ASSERT_TRUE(height.ok()) << height.error().message;
  EXPECT_EQ(*height, HeadlessChromium::kViewportHeight);
  fs::remove_all(dir);
}

// The colours of a PNG's pixels, decoded by the browser itself: the PNG goes back as a data: URL
// into a canvas (data: images do not taint it). {"w", "h", "px": [[r, g, b, a] at each point]}.
Expected<json> PixelsOf(HeadlessChromium& browser, const fs::path& png, const json& points) {
  return browser.Evaluate(
      "new Promise((done, fail) => { const img = new Image();"
      " img.onload = () => { const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;"
      " const g = c.getContext('2d'); g.drawImage(img, 0, 0);"
      " done({w: img.width, h: img.height, px: " +
      points.dump() +
      ".map(([x, y]) => Array.from(g.getImageData(x, y, 1, 1).data))}); };"
      " img.onerror = () => fail(new Error('the PNG did not decode'));"
      " img.src = 'data:image/png;base64," +
      Base64Encode(ReadBytes(png)) + "'; })");
}

TEST(HeadlessChromium, ElementScreenshotIsTheElementInPageCoordinates) {
  const fs::path dir = MakeTempDir("browser");
  // The box lies below the first viewport and off the left edge, on white: a clip taken in
  // viewport coordinates, or off by a scroll, would show white at its corners.
  const std::string url =
      WriteFile(dir, "box.html",
                Page("",
                     "<div style=\"height: 2000px\"></div><div id=\"box\" style=\"margin-left: 100px; width: 200px;"
                     " height: 120px; background: rgb(0, 128, 255)\"></div><div style=\"height: 2000px\"></div>"));
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->Navigate(url).ok());
  const Status shot = browser->ScreenshotElement("#box", dir / "box.png");
  ASSERT_TRUE(shot.ok()) << shot.error().message;
  const auto png = ReadPngSize(ReadBytes(dir / "box.png"));
  ASSERT_TRUE(png.has_value()) << "not a PNG";
  EXPECT_EQ(png->width, 200u);
  EXPECT_EQ(png->height, 120u);
  auto pixels = PixelsOf(*browser, dir / "box.png", json::parse("[[0, 0], [199, 0], [0, 119], [199, 119], [100, 60]]"));
  ASSERT_TRUE(pixels.ok()) << pixels.error().message;
  for (const json& px : (*pixels)["px"]) EXPECT_EQ(px, json::parse("[0, 128, 255, 255]")) << pixels->dump();
  const Status missing = browser->ScreenshotElement("#nothing", dir / "none.png");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no element matches #nothing"), std::string::npos) << missing.error().message;
  fs::remove_all(dir);
}

TEST(HeadlessChromium, ConsoleErrorsAndAssertsAreRecordedWithTheirText) {
  const fs::path dir = MakeTempDir("browser");
  const std::string url =
      WriteFile(dir, "console.html",
                Page("",
                     "<script>console.log('fine'); console.warn('only a warning');\n"
                     "console.error('the report broke', 42); console.assert(1 === 2, 'one is not two');</script>"));
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->Navigate(url).ok());
  const auto& errors = browser->ConsoleErrors();
  ASSERT_EQ(errors.size(), 2u) << Join(errors);
  EXPECT_EQ(errors[0].rfind("console.error: the report broke 42 (" + url + ":4:", 0), 0u) << errors[0];
  EXPECT_EQ(errors[1].rfind("console.assert: ", 0), 0u) << errors[1];
  EXPECT_NE(errors[1].find("one is not two"), std::string::npos) << errors[1];
  fs::remove_all(dir);
}

TEST(HeadlessChromium, UncaughtExceptionsAreRecorded) {
  const fs::path dir = MakeTempDir("browser");
  const std::string url = WriteFile(dir, "throw.html",
                                    Page("",
                                         "<script>Promise.reject(new Error('never handled'));</script>"
                                         "<script>throw new Error('kaboom');</script><p id=\"after\">still here</p>"));
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->Navigate(url).ok());
  EXPECT_TRUE(Contains(browser->ConsoleErrors(), "Error: kaboom")) << Join(browser->ConsoleErrors());
  EXPECT_TRUE(Contains(browser->ConsoleErrors(), "Error: never handled")) << Join(browser->ConsoleErrors());
  auto after = browser->Evaluate("document.getElementById('after').textContent");
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(*after, "still here");
  fs::remove_all(dir);
}

TEST(HeadlessChromium, HttpRequestIsSeenAndItsFailureReported) {
  const fs::path dir = MakeTempDir("browser");
  // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
  const std::string url = WriteFile(dir, "remote.html", Page("", "<img alt=\"\" src=\"http://127.0.0.1:9/x.png\">"));
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->Navigate(url).ok());
  EXPECT_TRUE(Contains(browser->Requests(), "http://127.0.0.1:9/x.png")) << Join(browser->Requests());
  ASSERT_EQ(browser->FailedRequests().size(), 1u) << Join(browser->FailedRequests());
  EXPECT_EQ(browser->FailedRequests()[0].rfind("http://127.0.0.1:9/x.png: net::ERR_", 0), 0u)
      << browser->FailedRequests()[0];
  browser->ClearRecorded();
  EXPECT_TRUE(browser->Requests().empty());
  EXPECT_TRUE(browser->FailedRequests().empty());
  fs::remove_all(dir);
}

TEST(HeadlessChromium, EvaluateReturnsValuesAndReportsExceptions) {
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  auto object = browser->Evaluate("({a: [1, 'two', null], b: 1.5})");
  ASSERT_TRUE(object.ok()) << object.error().message;
  EXPECT_EQ(*object, json::parse(R"({"a": [1, "two", null], "b": 1.5})"));
  auto undefined = browser->Evaluate("undefined");
  ASSERT_TRUE(undefined.ok()) << undefined.error().message;
  EXPECT_TRUE(undefined->is_null());
  auto awaited = browser->Evaluate("new Promise(r => setTimeout(() => r(7), 10))");
  ASSERT_TRUE(awaited.ok()) << awaited.error().message;
  EXPECT_EQ(*awaited, 7);
  auto thrown = browser->Evaluate("throw new Error('nope')");
  ASSERT_FALSE(thrown.ok());
  EXPECT_NE(thrown.error().message.find("Error: nope"), std::string::npos) << thrown.error().message;
  auto rejected = browser->Evaluate("Promise.reject(new Error('later'))");
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().message.find("Error: later"), std::string::npos) << rejected.error().message;
  EXPECT_EQ(Join(browser->ConsoleErrors()), "");  // Evaluate's own exceptions are its errors only
}

TEST(HeadlessChromium, TimeoutsAndProtocolErrorsAreErrorsNotHangs) {
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  const auto t0 = Clock::now();
  auto slow = browser->Evaluate("new Promise(r => setTimeout(() => r('late'), 500))", std::chrono::milliseconds(100));
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("timed out"), std::string::npos) << slow.error().message;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  // The late reply to the timed-out call arrives first and must not be taken for this one's.
  auto next = browser->Evaluate("new Promise(r => setTimeout(() => r('next'), 800))");
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(*next, "next");
  auto unknown = browser->Send("No.suchMethod");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("No.suchMethod: "), std::string::npos) << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("CDP error"), std::string::npos) << unknown.error().message;
  const Status missing = browser->Navigate("file:///nonexistent/kvaudit/page.html");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("net::ERR_FILE_NOT_FOUND"), std::string::npos) << missing.error().message;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(HeadlessChromium, MissingBinaryFailsWithAClearMessage) {
  ScopedEnv env("KVAUDIT_CHROMIUM", "/nonexistent/chromium");
  std::string error;
  EXPECT_EQ(HeadlessChromium::Launch(&error), nullptr);
  EXPECT_EQ(error,
            "cannot launch headless chromium: chromium not found: /nonexistent/chromium is not an executable"
            " file (from $KVAUDIT_CHROMIUM); install Debian's package chromium (scripts/setup.sh)");
}

TEST(HeadlessChromium, BinaryThatIsNoBrowserFailsFast) {
  ScopedEnv env("KVAUDIT_CHROMIUM", "/bin/true");  // exits at once without a word on fd 4
  const auto t0 = Clock::now();
  std::string error;
  EXPECT_EQ(HeadlessChromium::Launch(&error), nullptr);
  // Its fd 3 or its fd 4, by which of the two the harness finds closed first.
  EXPECT_NE(error.find("Browser.getVersion: the child closed its"), std::string::npos) << error;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
}

// The pids of processes whose command line names dir (Chromium passes --user-data-dir to its
// helpers too).
std::vector<pid_t> ProcessesNaming(const fs::path& dir) {
  std::vector<pid_t> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(dir.string()) != std::string::npos) found.push_back(std::stoi(pid));
  }
  return found;
}

TEST(HeadlessChromium, DestructionLeavesNoProcessAndNoProfile) {
  const fs::path dir = MakeTempDir("browser");
  const std::string url = WriteFile(dir, "p.html", Page("", "<p>renderer</p>"));
  auto browser = LaunchChromiumOrFail();
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->Navigate(url).ok());  // a renderer process exists now
  const pid_t pid = browser->Pid();
  const fs::path profile = browser->UserDataDir(), temp = profile.parent_path();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(kill(pid, 0), 0);
  // The browser, its zygotes and renderers name the profile, all in the browser's group; the
  // crash handlers name the temp dir ($XDG_CONFIG_HOME) from sessions of their own.
  const std::vector<pid_t> helpers = ProcessesNaming(profile), all = ProcessesNaming(temp);
  EXPECT_GE(helpers.size(), 3u);
  for (pid_t p : helpers) EXPECT_EQ(getpgid(p), pid) << p << " is outside the browser's group";
  EXPECT_GT(all.size(), helpers.size()) << "no crash handler: drop the stray handling of support/pipe_process.h?";
  browser.reset();
  EXPECT_EQ(kill(pid, 0), -1);  // reaped: not even a zombie
  EXPECT_EQ(errno, ESRCH);
  EXPECT_EQ(kill(-pid, 0), -1);  // nothing left in its process group either
  EXPECT_EQ(errno, ESRCH);
  for (pid_t p : all) EXPECT_TRUE(kill(p, 0) == -1 && errno == ESRCH) << p << " is still there (or a zombie)";
  EXPECT_TRUE(ProcessesNaming(temp).empty());
  EXPECT_FALSE(fs::exists(temp));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit::testing
