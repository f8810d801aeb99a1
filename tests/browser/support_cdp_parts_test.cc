// The browser harness's parts that need no browser: base64 (support/base64.h), the PNG header
// (support/png_info.h) and the lines CdpRecorder makes of CDP events (support/cdp_recorder.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/base64.h"
#include "support/cdp_recorder.h"
#include "support/png_info.h"

namespace kvaudit::testing {
namespace {

using nlohmann::json;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(Base64, Rfc4648TestVectors) {  // RFC 4648 section 10
  const std::vector<std::pair<std::string, std::string>> vectors = {{"", ""},
                                                                    {"f", "Zg=="},
                                                                    {"fo", "Zm8="},
                                                                    {"foo", "Zm9v"},
                                                                    {"foob", "Zm9vYg=="},
                                                                    {"fooba", "Zm9vYmE="},
                                                                    {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(Bytes(plain)), encoded);
    const auto decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.has_value()) << encoded;
    EXPECT_EQ(*decoded, Bytes(plain)) << encoded;
  }
}

TEST(Base64, RoundTripsEveryByteValue) {
  std::vector<uint8_t> all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<uint8_t>(i));
  for (size_t n : {253u, 254u, 255u, 256u}) {  // each length modulo 3
    const std::vector<uint8_t> part(all.begin(), all.begin() + n);
    EXPECT_EQ(Base64Decode(Base64Encode(part)), part) << n;
  }
  EXPECT_EQ(Base64Encode(all).substr(0, 4), "AAEC");
  EXPECT_EQ(Base64Encode({0xFB, 0xFF}), "+/8=");  // the two symbols past the alphanumerics
}

TEST(Base64, RejectsDamagedText) {
  for (const char* bad : {"Zg=", "Zm9", "Zm9v!A==", "Zg==Zg==", "Z===", "====", "Zm9v\n", "Zm 9v"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
}

TEST(PngInfo, ReadsTheIhdrSize) {
  std::vector<uint8_t> png = {0x89, 'P', 'N',  'G',  0x0D, 0x0A, 0x1A, 0x0A, 0,    0,
                              0,    13,  'I',  'H',  'D',  'R',  0,    0,    0x05, 0x00,  // width 1280
                              0,    0,   0x0B, 0xB8,                                      // height 3000
                              8,    6,   0,    0,    0};
  const auto size = ReadPngSize(png);
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(size->width, 1280u);
  EXPECT_EQ(size->height, 3000u);
  png[1] = 'Q';
  EXPECT_FALSE(ReadPngSize(png).has_value());                                                  // not the signature
  EXPECT_FALSE(ReadPngSize(std::vector<uint8_t>(png.begin(), png.begin() + 20)).has_value());  // cut short
}

TEST(CdpRecorder, TurnsProblemEventsIntoLines) {
  CdpRecorder r;
  r.Record(json::parse(R"({"method": "Runtime.consoleAPICalled", "params": {"type": "log",
      "args": [{"type": "string", "value": "ignored"}]}})"));
  r.Record(json::parse(R"({"method": "Runtime.consoleAPICalled", "params": {"type": "error",
      "args": [{"type": "string", "value": "bad"}, {"type": "number", "value": 3},
               {"type": "object", "className": "Error", "description": "Error: x"}],
      "stackTrace": {"callFrames": [{"url": "file:///r.html", "lineNumber": 9, "columnNumber": 4}]}}})"));
  r.Record(json::parse(R"({"method": "Runtime.exceptionThrown", "params": {"exceptionDetails": {
      "text": "Uncaught", "url": "file:///r.html", "lineNumber": 0, "columnNumber": 0,
      "exception": {"type": "object", "description": "TypeError: y is undefined"}}}})"));
  r.Record(json::parse(R"({"method": "Log.entryAdded", "params": {"entry": {"source": "network",
      "level": "error", "text": "Failed to load resource", "url": "http://a/b"}}})"));
  r.Record(json::parse(R"({"method": "Log.entryAdded", "params": {"entry": {"source": "other",
      "level": "warning", "text": "ignored"}}})"));
  ASSERT_EQ(r.console_errors().size(), 3u);
  EXPECT_EQ(r.console_errors()[0], "console.error: bad 3 Error: x (file:///r.html:10:5)");
  EXPECT_EQ(r.console_errors()[1], "exception: Uncaught TypeError: y is undefined (file:///r.html:1:1)");
  EXPECT_EQ(r.console_errors()[2], "log network: Failed to load resource (http://a/b)");
}

TEST(CdpRecorder, NamesAFailedRequestByItsUrl) {
  CdpRecorder r;
  r.Record(json::parse(R"({"method": "Network.requestWillBeSent", "params": {"requestId": "7",
      "request": {"url": "http://127.0.0.1:9/x.png"}}})"));
  r.Record(json::parse(R"({"method": "Network.requestWillBeSent", "params": {"requestId": "8",
      "request": {"url": "file:///ok.css"}}})"));
  r.Record(json::parse(R"({"method": "Network.loadingFailed", "params": {"requestId": "7",
      "errorText": "net::ERR_CONNECTION_REFUSED"}})"));
  r.Record(json::parse(R"({"method": "Network.loadingFailed", "params": {"requestId": "99",
      "errorText": "net::ERR_ABORTED", "canceled": true, "blockedReason": "csp"}})"));
  EXPECT_EQ(r.requests(), (std::vector<std::string>{"http://127.0.0.1:9/x.png", "file:///ok.css"}));
  ASSERT_EQ(r.failed_requests().size(), 2u);
  EXPECT_EQ(r.failed_requests()[0], "http://127.0.0.1:9/x.png: net::ERR_CONNECTION_REFUSED");
  EXPECT_EQ(r.failed_requests()[1], "(unannounced request): net::ERR_ABORTED (blocked: csp) (canceled)");
  r.Clear();
  EXPECT_TRUE(r.requests().empty() && r.failed_requests().empty() && r.console_errors().empty());
}

}  // namespace
}  // namespace kvaudit::testing
