// The report's plumbing without a browser: values tagged with their source (value_ref.h) and the
// reading of result directories (report_inputs.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "report/report_inputs.h"
#include "report/value_ref.h"
#include "support/fixtures.h"

namespace kvaudit::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(ReportValueRef, PointersEscapeAndValuesFormatByKind) {
  EXPECT_EQ(Pointer({"configs", "1", "a/b", "c~d"}), "/configs/1/a~1b/c~0d");
  const json n = nullptr, yes = true, frac = 0.53125, count = 1022.6, text = "<b>&";
  EXPECT_EQ(FormatValue(nullptr, ValueFormat::kSig), "–");
  EXPECT_EQ(FormatValue(&n, ValueFormat::kInt), "–");
  EXPECT_EQ(FormatValue(&yes, ValueFormat::kPassFail), "PASS");
  EXPECT_EQ(FormatValue(&frac, ValueFormat::kPercent), "53.1\u00a0%");
  EXPECT_EQ(FormatValue(&frac, ValueFormat::kSig), "0.5312");
  EXPECT_EQ(FormatValue(&count, ValueFormat::kInt), "1023");
  EXPECT_EQ(FormatValue(&count, ValueFormat::kBytes), "1023\u00a0B");
  EXPECT_EQ(FormatValue(&text, ValueFormat::kText), "&lt;b&gt;&amp;");
}

TEST(ReportValueRef, SpansAndCellsCarryTheirSource) {
  RunDirectory dir;
  dir.index = 2;
  const ResultsFile file{"eval/results.json", json{{"configs", {{{"spec", "k=q4_0,v=q4_0"}, {"pass", false}}}}}};
  EXPECT_EQ(
      ValueSpan(dir, file, "/configs/0/spec", ValueFormat::kText),
      "<span class=\"v\" data-src=\"2|eval/results.json|/configs/0/spec\" data-format=\"text\">k=q4_0,v=q4_0</span>");
  EXPECT_NE(ValueSpan(dir, file, "/configs/0/pass", ValueFormat::kPassFail).find("class=\"v fail\""),
            std::string::npos);
  const std::string absent = ValueCell(dir, file, "/configs/3/spec", ValueFormat::kText);
  EXPECT_NE(absent.find("data-sort=\"\""), std::string::npos);
  EXPECT_NE(absent.find(">–</span>"), std::string::npos);
  EXPECT_EQ(Lookup(file, "/configs/0/nothing"), nullptr);
}

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(ReportInputs, KindsPartsAndLabels) {
  const fs::path root = testing::MakeTempDir("report-inputs");
  Write(root / "a" / "run" / "results.json", R"({"kind": "eval", "configs": [], "ctx": 128})");
  Write(root / "b" / "run" / "results.json", R"({"probes": [], "configs": []})");  // before `kind` existed
  Write(root / "audit" / "results.json", R"({"kind": "audit", "eval": "eval/results.json", "recommend": null})");
  Write(root / "audit" / "eval" / "results.json", R"({"kind": "eval", "configs": [], "ctx": 128})");
  Write(root / "wrong" / "eval" / "results.json", R"({"kind": "probe", "probes": []})");

  Expected<RunDirectory> a = LoadRunDirectory((root / "a" / "run").string(), 0);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->kind, "eval");
  EXPECT_TRUE(a->eval.has_value());
  EXPECT_FALSE(a->probe.has_value());
  Expected<RunDirectory> b = LoadRunDirectory((root / "b" / "run").string(), 1);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->kind, "probe");
  std::vector<RunDirectory> dirs{*a, *b};
  LabelRunDirectories(dirs);
  EXPECT_EQ(dirs[0].label, "run");
  EXPECT_EQ(dirs[1].label, "run#2");

  Expected<RunDirectory> audit = LoadRunDirectory((root / "audit").string(), 0);
  ASSERT_TRUE(audit.ok()) << audit.error().message;
  EXPECT_TRUE(audit->eval.has_value());
  EXPECT_FALSE(audit->probe.has_value());
  ASSERT_EQ(audit->missing.size(), 2u);
  EXPECT_NE(audit->missing[0].find("probe results"), std::string::npos);
  EXPECT_NE(audit->missing[1].find("without --budget"), std::string::npos);

  // An interrupted audit whose eval/ holds another kind's file: bad input, named.
  Expected<RunDirectory> wrong = LoadRunDirectory((root / "wrong").string(), 0);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("is a 'probe' result where a 'eval' result belongs"), std::string::npos);
  EXPECT_EQ(wrong.error().exit_code(), 2);
  fs::remove_all(root);
}

}  // namespace
}  // namespace kvaudit::report
