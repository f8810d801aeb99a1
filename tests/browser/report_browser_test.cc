// The audit report in a real browser (docs/report.md "Tested"): the bundled model's audit, rendered
// by kvaudit audit into DIR/report.html, opened from file:// in headless Chromium with JavaScript
// on. The test fails on any console error, failed request or non-file resource; it takes a
// full-page screenshot (kept under test-artifacts/ in the build folder), checks that every section
// is there, reads every value the page tags with its source (data-src) and compares it with the
// results.json it came from, and parses the page with a strict HTML5 parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/fixtures.h"
#include "support/headless_chromium.h"
#include "support/html_strict.h"
#include "support/run_cli.h"  // ReadFile

namespace kvaudit::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kSections[] = {"verdict",     "memory", "curves",      "attention",
                           "sensitivity", "probes", "worst-cases", "run-info"};

fs::path ArtifactsDir() {
  const char* env = std::getenv("KVAUDIT_TEST_ARTIFACTS");
  const fs::path dir = env && *env ? fs::path(env) : fs::current_path() / "test-artifacts";
  fs::create_directories(dir);
  return dir;
}

// One audit of the bundled model for every test here, run once by the ctest fixture
// ReportBrowserAudit (tests/CMakeLists.txt) into $KVAUDIT_REPORT_AUDIT: small (ctx 384, two
// windows) but with every section's data: eval with the attention diagnosis, the code workload's
// probes with a needle grid of two lengths, a recommendation under a budget.
const fs::path& AuditDir() {
  static const fs::path dir = [] {
    const char* env = std::getenv("KVAUDIT_REPORT_AUDIT");
    return fs::path(env && *env ? env : "");
  }();
  return dir;
}

json ReadJson(const fs::path& p) { return json::parse(ReadFile(p.string()), nullptr, false); }

// The page's tagged values: [{src, format, text, section}].
const char* kCollectValues = R"JS(
Array.from(document.querySelectorAll("[data-src]")).map(function (el) {
  const section = el.closest("section");
  return {src: el.getAttribute("data-src"), format: el.getAttribute("data-format"),
          text: el.textContent, section: section ? section.id : ""};
})
)JS";

// "0|eval/results.json|/configs/1/overall/kld_mean" -> the value in that file under dir.
const json* Resolve(const std::string& src, std::map<std::string, json>& files, std::string* why) {
  const size_t a = src.find('|'), b = src.find('|', a + 1);
  if (a == std::string::npos || b == std::string::npos) return *why = "malformed data-src " + src, nullptr;
  if (src.substr(0, a) != "0") return *why = "unexpected directory index in " + src, nullptr;
  const std::string file = src.substr(a + 1, b - a - 1);
  if (!files.count(file)) files[file] = ReadJson(AuditDir() / file);
  const json& doc = files[file];
  const json::json_pointer ptr(src.substr(b + 1));
  if (!doc.contains(ptr)) return *why = "no value at " + src, nullptr;
  return &doc.at(ptr);
}

// Does the text the page shows equal the file's value, to the precision the format prints?
bool Matches(const json& v, const std::string& format, const std::string& text, std::string* why) {
  *why = "shows '" + text + "' for " + v.dump() + " (" + format + ")";
  if (v.is_null()) return text == "–";
  if (format == "text") return v.is_string() ? text == v.get<std::string>() : text == v.dump();
  if (format == "passfail") return text == (v.is_string() ? v.get<std::string>() : v.get<bool>() ? "PASS" : "FAIL");
  const double shown = std::strtod(text.c_str(), nullptr), x = v.get<double>();
  if (format == "int" || format == "bytes") return shown == std::round(x);
  if (format == "pct") return std::fabs(shown / 100 - x) <= 0.0005 + 1e-12;
  return std::fabs(shown - x) <= 5e-4 * std::fabs(x) + 1e-300;  // sig, gib: 4 significant digits
}

class ReportBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(AuditDir().empty())
        << "KVAUDIT_REPORT_AUDIT is not set: run these tests through ctest (fixture ReportBrowserAudit)";
    ASSERT_TRUE(fs::exists(AuditDir() / "results.json")) << "the fixture audit did not finish: " << AuditDir();
    std::string error;
    browser_ = HeadlessChromium::Launch(&error);
    ASSERT_NE(browser_, nullptr) << "headless Chromium did not start (CI needs it; scripts/setup.sh installs it): "
                                 << error;
    page_ = AuditDir() / "report.html";
    ASSERT_TRUE(fs::exists(page_)) << "kvaudit audit did not write " << page_;
    const Status loaded = browser_->Navigate("file://" + fs::absolute(page_).string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  }
  std::unique_ptr<HeadlessChromium> browser_;
  fs::path page_;
};

TEST_F(ReportBrowserTest, LoadsOfflineWithoutErrorsAndEverySectionIsThere) {
  EXPECT_TRUE(browser_->ConsoleErrors().empty()) << browser_->ConsoleErrors().front();
  EXPECT_TRUE(browser_->FailedRequests().empty()) << browser_->FailedRequests().front();
  for (const std::string& url : browser_->Requests()) {
    EXPECT_TRUE(url.rfind("file://", 0) == 0 || url.rfind("data:", 0) == 0) << "the page requested " << url;
  }
  const Expected<json> refs = browser_->Evaluate(
      "Array.from(document.querySelectorAll('[src],[href]')).map(e => e.getAttribute('src') || "
      "e.getAttribute('href'))");
  ASSERT_TRUE(refs.ok()) << refs.error().message;
  for (const json& r : *refs) EXPECT_EQ(r.get<std::string>().rfind("http", 0), std::string::npos) << r;
  const std::string html = ReadFile(page_.string());
  EXPECT_EQ(html.find("url(http"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  for (const char* id : kSections) {
    const Expected<json> present = browser_->Evaluate(std::string("!!document.getElementById('") + id + "')");
    ASSERT_TRUE(present.ok());
    EXPECT_TRUE(present->get<bool>()) << "section " << id << " is missing";
  }
  const fs::path shot = ArtifactsDir() / "report-full-page.png";
  const Status s = browser_->ScreenshotFullPage(shot);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_GT(fs::file_size(shot), 10000u);
  EXPECT_TRUE(browser_->ConsoleErrors().empty()) << browser_->ConsoleErrors().front();
}

TEST_F(ReportBrowserTest, EveryTaggedValueEqualsItsResultsFile) {
  const Expected<json> values = browser_->Evaluate(kCollectValues);
  ASSERT_TRUE(values.ok()) << values.error().message;
  std::map<std::string, json> files;
  std::map<std::string, int> per_section;
  int compared = 0;
  for (const json& v : *values) {
    std::string why;
    const json* value = Resolve(v["src"].get<std::string>(), files, &why);
    ASSERT_NE(value, nullptr) << why;
    EXPECT_TRUE(Matches(*value, v["format"].get<std::string>(), v["text"].get<std::string>(), &why))
        << v["src"].get<std::string>() << ": " << why;
    ++compared, ++per_section[v["section"].get<std::string>()];
  }
  EXPECT_GE(compared, 20);
  // The bundled model fails the exact probes with the full-precision cache: the verdict section
  // names the family as no signal, a value tagged with its place in results.json.
  const bool no_signal = std::any_of(values->begin(), values->end(), [](const json& v) {
    return v["section"] == "verdict" &&
           v["src"].get<std::string>().find("/configs/0/no_signal/") != std::string::npos &&
           v["text"].get<std::string>().rfind("exact: the baseline passes 0 of", 0) == 0;
  });
  EXPECT_TRUE(no_signal) << "the verdict section does not name exact as no signal";
  RecordProperty("values_compared", compared);
  std::printf("compared %d tagged values with their results.json\n", compared);
  for (const char* id : {"verdict", "memory", "sensitivity", "probes", "worst-cases", "run-info"}) {
    EXPECT_GE(per_section[id], 3) << "section " << id << " shows too few values from results.json";
  }
}

TEST_F(ReportBrowserTest, ChartsDrawTheResultsPointForPoint) {
  const json eval = ReadJson(AuditDir() / "eval" / "results.json");
  size_t buckets = 0;
  for (const json& c : eval["configs"]) buckets += c["buckets"].size();
  const Expected<json> ys = browser_->Evaluate(
      "Array.from(document.querySelectorAll('#kld-vs-context circle[data-y]')).map(c => "
      "[c.getAttribute('data-series'), parseFloat(c.getAttribute('data-x')), parseFloat(c.getAttribute('data-y'))])");
  ASSERT_TRUE(ys.ok()) << ys.error().message;
  ASSERT_EQ(ys->size(), buckets);
  std::map<std::string, std::map<double, double>> drawn;
  for (const json& p : *ys) drawn[p[0].get<std::string>()][p[1].get<double>()] = p[2].get<double>();
  for (const json& c : eval["configs"]) {
    for (const json& b : c["buckets"]) {
      const double x = b.contains("measured_to") ? b["measured_to"].get<double>() : b["to"].get<double>();
      EXPECT_EQ(drawn[c["spec"].get<std::string>()][x], b["kld_mean"].get<double>()) << c["spec"] << " at " << x;
    }
  }
  // One heatmap cell per (layer, KV head), per configuration and quantity (4 quantities).
  size_t cells = 0;
  for (const json& c : eval["configs"]) cells += c["attention"].size();
  const Expected<json> rects = browser_->Evaluate("document.querySelectorAll('#attention rect[data-value]').length");
  ASSERT_TRUE(rects.ok());
  EXPECT_EQ(rects->get<size_t>(), 4 * cells);
  // The Pareto front marks the recommendation.
  const json rec = ReadJson(AuditDir() / "recommend" / "results.json");
  ASSERT_TRUE(rec["recommended"].is_object());
  const Expected<json> star = browser_->Evaluate(
      "Array.from(document.querySelectorAll('#sensitivity [data-mark=\"recommended\"]')).map(e => "
      "e.getAttribute('data-label'))");
  ASSERT_TRUE(star.ok());
  ASSERT_EQ(star->size(), 1u);
  EXPECT_EQ((*star)[0], rec["recommended"]["spec"]);
}

TEST_F(ReportBrowserTest, SortingAndTogglesWorkAndThePageIsStrictHtml) {
  // Sort the memory table by bytes/token (third column) twice: ascending, then descending.
  const Expected<json> order = browser_->Evaluate(R"JS(
    (function () {
      const th = document.querySelectorAll("#memory-table thead th")[1];
      const col = () => Array.from(document.querySelectorAll("#memory-table tbody tr")).map(r => parseFloat(r.cells[1].getAttribute("data-sort")));
      th.click(); const up = col(); th.click(); const down = col();
      return [up, down];
    })())JS");
  ASSERT_TRUE(order.ok()) << order.error().message;
  std::vector<double> up = (*order)[0], down = (*order)[1];
  EXPECT_TRUE(std::is_sorted(up.begin(), up.end()));
  EXPECT_TRUE(std::is_sorted(down.rbegin(), down.rend()));
  // Unticking a configuration hides its line and rows.
  const Expected<json> hidden = browser_->Evaluate(R"JS(
    (function () {
      const box = document.querySelector("input[data-toggle]");
      box.click();
      const name = box.getAttribute("data-toggle");
      const els = Array.from(document.querySelectorAll("[data-series], [data-config]")).filter(e => (e.getAttribute("data-series") ?? e.getAttribute("data-config")) === name);
      return els.length > 0 && els.every(e => getComputedStyle(e).display === "none");
    })())JS");
  ASSERT_TRUE(hidden.ok()) << hidden.error().message;
  EXPECT_TRUE(hidden->get<bool>());
  EXPECT_TRUE(browser_->ConsoleErrors().empty()) << browser_->ConsoleErrors().front();
  // Printed: the controls go, nothing runs off the side of the page, and a PDF comes out.
  ASSERT_TRUE(browser_->Send("Emulation.setEmulatedMedia", {{"media", "print"}}).ok());
  const Expected<json> printed = browser_->Evaluate(R"JS(
    (function () {
      document.querySelectorAll(".hidden-config").forEach(e => e.classList.remove("hidden-config"));
      const toggles = getComputedStyle(document.querySelector("nav.toggles")).display;
      return [toggles, document.documentElement.scrollWidth, document.querySelectorAll("svg").length, window.innerWidth];
    })())JS");
  ASSERT_TRUE(printed.ok()) << printed.error().message;
  EXPECT_EQ((*printed)[0], "none");
  EXPECT_GT((*printed)[2].get<int>(), 10);
  EXPECT_LE((*printed)[1].get<double>(), (*printed)[3].get<double>()) << "the printed page is wider than the paper";
  const Expected<json> pdf = browser_->Send("Page.printToPDF", {{"printBackground", true}});
  ASSERT_TRUE(pdf.ok()) << pdf.error().message;
  EXPECT_GT((*pdf)["data"].get<std::string>().size(), 10000u);
  const std::vector<std::string> errors = HtmlParseErrors(ReadFile(page_.string()));
  EXPECT_TRUE(errors.empty()) << errors.size() << " parse errors, first: " << errors.front();
}

}  // namespace
}  // namespace kvaudit::testing
