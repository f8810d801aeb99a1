// HeadlessChromium's screenshots and timing (support/headless_chromium.h): everything here is
// built from Send and Evaluate.
#include <cmath>
#include <fstream>

#include "support/base64.h"
#include "support/headless_chromium.h"

namespace kvaudit::testing {
namespace {

using nlohmann::json;

Status WriteBytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Internal("cannot write " + path.string());
  return Status::Ok();
}

// The page-coordinate box {x, y, width, height} of the first match of a selector, after scrolling
// it into view (so lazy content around it is laid out), or null when nothing matches. The
// selector travels as a JSON string literal, which is also a JS one.
std::string ElementBoxScript(const std::string& css_selector) {
  return "(() => { const e = document.querySelector(" + json(css_selector).dump() +
         "); if (!e) return null; e.scrollIntoView({block: 'start', inline: 'start'});"
         " const r = e.getBoundingClientRect();"
         " return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height}; })()";
}

}  // namespace

// Page.captureScreenshot's base64 "data", decoded.
Expected<std::vector<uint8_t>> HeadlessChromium::Capture(const json& params) {
  KV_ASSIGN_OR_RETURN(const json shot, Send("Page.captureScreenshot", params));
  const json data = shot.value("data", json());
  auto bytes = data.is_string() ? Base64Decode(data.get<std::string>()) : std::nullopt;
  if (!bytes || bytes->empty()) return Internal("Page.captureScreenshot: no valid base64 data in its reply");
  return std::move(*bytes);
}

Status HeadlessChromium::ScreenshotFullPage(const std::filesystem::path& png) {
  KV_ASSIGN_OR_RETURN(const json metrics, Send("Page.getLayoutMetrics"));
  const json size = metrics.value("cssContentSize", json::object());
  if (!size.value("width", json()).is_number() || !size.value("height", json()).is_number()) {
    return Internal("Page.getLayoutMetrics: no cssContentSize in " + metrics.dump());
  }
  // The viewport becomes the whole content, so the capture needs no scrolling and fixed elements
  // appear once; captureBeyondViewport covers content that overflows even that.
  KV_RETURN_IF_ERROR(SetViewport(static_cast<int64_t>(std::ceil(size["width"].get<double>())),
                                 static_cast<int64_t>(std::ceil(size["height"].get<double>()))));
  auto bytes = Capture({{"format", "png"}, {"captureBeyondViewport", true}});
  const Status restored = SetViewport(kViewportWidth, kViewportHeight);  // even after a failed capture
  if (!bytes) return bytes.error();
  if (!restored) return restored.error();
  return WriteBytes(png, *bytes);
}

Status HeadlessChromium::ScreenshotElement(const std::string& css_selector, const std::filesystem::path& png) {
  KV_ASSIGN_OR_RETURN(const json box, Evaluate(ElementBoxScript(css_selector)));
  if (box.is_null()) return BadInput("ScreenshotElement: no element matches " + css_selector);
  if (box.value("width", 0.0) <= 0 || box.value("height", 0.0) <= 0) {
    return BadInput("ScreenshotElement: " + css_selector + " has an empty box " + box.dump());
  }
  json clip = box;
  clip["scale"] = 1;
  KV_ASSIGN_OR_RETURN(const auto bytes, Capture({{"format", "png"}, {"clip", clip}, {"captureBeyondViewport", true}}));
  return WriteBytes(png, bytes);
}

Expected<double> HeadlessChromium::NavigationMs() {
  // loadEventEnd stays 0 until the load handlers have returned, which may be just after
  // Page.loadEventFired: poll for it in the page (bounded by Evaluate's timeout).
  KV_ASSIGN_OR_RETURN(
      const json ms,
      Evaluate("new Promise(done => { const poll = () => {"
               " const e = performance.getEntriesByType('navigation')[0];"
               " if (!e) done(null); else if (e.loadEventEnd > 0) done(e.loadEventEnd); else setTimeout(poll, 5); };"
               " poll(); })"));
  if (!ms.is_number()) return Internal("NavigationMs: the document has no navigation timing entry");
  return ms.get<double>();
}

}  // namespace kvaudit::testing
