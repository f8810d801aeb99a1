// The layer rule of src/ (docs/architecture.md "Layers"), checked on every include line.
//
// A unit is a folder under src/: kv/formats, kv/store, ... are sub-layers of kv, and the files
// directly in src/kv form the unit "kv", above its sub-layers. Units are ordered from the bottom
// (base) to the top (cli); a file may include files of its own unit and of units below it, never
// above, and every quoted include must name a file of src/ (a typo or a path into tests/ fails).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/fixtures.h"

namespace kvaudit::testing {
namespace {

// Bottom first. Siblings that do not use each other still get an order: stricter than needed, but
// a rule a reader can hold in the head.
const std::vector<std::string>& LayerOrder() {
  static const std::vector<std::string> order = {
      "base",          // Status/Expected, f16/bf16, thread pool, the kernel paths
      "quant",         // number formats: one traits row and one file per ggml block format
      "ops",           // matmul, norms, rope, softmax, Hadamard: scalar references + SIMD twins
      "ops/ggml",      // llama.cpp CPU backend's weight arithmetic (engine=llama.cpp): its dot orders
      "io",            // mapped files, GGUF, safetensors, dequantization
      "tokenizer",     // byte-level BPE, SentencePiece BPE, chat templates
      "model",         // config, weights, forward pass, the KvCache interface
      "kv/formats",    // one file per KV format, the traits table, row codecs, block decoders
      "kv/config",     // the --kv grammar (CacheConfig, HeadConfig), calibration statistics
      "kv/store",      // packed row stores, the KIVI store, their kernels
      "kv/attention",  // chunked attention over f32 rows and stores
      "kv/llamacpp",   // llama.cpp's CPU flash-attention emulation and its cache
      "kv",            // the caches (f32, quantized), MakeCache, calibration runs
      "run",           // driving the engine: scoring, sampling, generation, text, journals
      "endpoint",      // remote servers: URL specs, API keys, the resilient HTTP client, dialects, RemoteBackend
      "job",           // the job skeleton: options, the loaded runtime, run directory, journal, shards
      "eval",          // fidelity: metrics, buckets, CIs, attention diagnosis, eval results
      "probe",         // probe generators, checks, attribution, McNemar
      "scale",         // scale-out: `kvaudit merge` of --shard runs (eval, probe, and staged jobs' stages)
      // The deployment decision, a sub-layer per concept (docs/decision.md):
      "decide/acceptance",   // the acceptance policy: presets, TOML files, its text
      "decide/targets",      // deployment targets: each engine's settings and KV memory for a spec
      "decide/gate",         // results.json judged by a policy: verdicts, JUnit, markdown
      "decide/search",       // the mix search: budgets, per-part problems, fronts, spec rendering
      "decide/sensitivity",  // per-layer sensitivity: staged evals, the proxy, rank correlation
      "decide/recommend",    // sensitivity -> fronts -> verified points -> the recommendation
      "decide/audit",        // the main job: eval + probes + recommend + gate, the verdict block
      "report",              // the HTML/markdown report of result directories
      "serve",               // the OpenAI-compatible HTTP server: requests, workers, metrics, auth
      "cli",                 // thin subcommand mains
  };
  return order;
}

struct Violation {
  std::string file;     // relative to src/
  int line = 0;         // 1-based
  std::string include;  // as written
  std::string why;
};

// "kv/formats/ggml_block_codecs.h" -> "kv/formats", "kv/make_cache.h" -> "kv"; "" when in no unit.
std::string UnitOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().generic_string();
  const auto& order = LayerOrder();
  return std::find(order.begin(), order.end(), dir) != order.end() ? dir : "";
}

int RankOf(const std::string& unit) {
  const auto& order = LayerOrder();
  return static_cast<int>(std::find(order.begin(), order.end(), unit) - order.begin());
}

// The quoted includes of one file's text; exists(include) says whether it names a file of src/.
std::vector<Violation> CheckIncludes(const std::string& file, const std::string& text,
                                     const std::function<bool(const std::string&)>& exists) {
  std::vector<Violation> out;
  const std::string unit = UnitOf(file);
  if (unit.empty()) return {{file, 0, "", "the file is in no layer (add its folder to LayerOrder and the docs)"}};
  static const std::regex kInclude(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    std::smatch m;
    if (!std::regex_search(line, m, kInclude)) continue;
    const std::string inc = m[1];
    const std::string target = UnitOf(inc);
    if (!exists(inc)) {
      out.push_back({file, n, inc, "names no file of src/"});
    } else if (target.empty()) {
      out.push_back({file, n, inc, "names a file in no layer"});
    } else if (RankOf(target) > RankOf(unit)) {
      out.push_back({file, n, inc, unit + " may not use " + target + " (it is above it)"});
    }
  }
  return out;
}

std::vector<Violation> CheckTree(const std::filesystem::path& src) {
  std::vector<Violation> out;
  auto exists = [&src](const std::string& inc) { return std::filesystem::is_regular_file(src / inc); };
  for (const auto& e : std::filesystem::recursive_directory_iterator(src)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string rel = std::filesystem::relative(e.path(), src).generic_string();
    for (Violation& v : CheckIncludes(rel, text.str(), exists)) out.push_back(std::move(v));
  }
  return out;
}

std::string Describe(const std::vector<Violation>& vs) {
  std::string s;
  for (const Violation& v : vs)
    s += "src/" + v.file + ":" + std::to_string(v.line) + ": #include \"" + v.include + "\": " + v.why + "\n";
  return s;
}

const auto kAllExist = [](const std::string&) { return true; };

TEST(Layering, UnitsAreFoldersAndTopLevelKvIsAboveItsSubLayers) {
  EXPECT_EQ(UnitOf("kv/formats/ggml_block_codecs.h"), "kv/formats");
  EXPECT_EQ(UnitOf("kv/make_cache.h"), "kv");
  EXPECT_EQ(UnitOf("eval/report.cc"), "eval");
  EXPECT_EQ(UnitOf("kv/formats/deeper/x.h"), "");
  EXPECT_EQ(UnitOf("main.cc"), "");
  EXPECT_GT(RankOf("kv"), RankOf("kv/llamacpp"));
  EXPECT_GT(RankOf("probe"), RankOf("eval"));
  EXPECT_EQ(UnitOf("decide/gate/junit.h"), "decide/gate");
  EXPECT_EQ(UnitOf("decide/junit.h"), "");  // decide's files live in its concept folders
  EXPECT_GT(RankOf("decide/audit"), RankOf("decide/recommend"));
  EXPECT_GT(RankOf("decide/acceptance"), RankOf("scale"));
}

TEST(Layering, AnIncludeAgainstTheDirectionIsReported) {
  // Edges against the direction: eval -> probe and kv -> eval; and inside kv, formats -> config.
  const auto a = CheckIncludes("eval/report.cc", "#include \"eval/report.h\"\n#include \"probe/check.h\"\n", kAllExist);
  ASSERT_EQ(a.size(), 1u) << Describe(a);
  EXPECT_EQ(a[0].line, 2);
  EXPECT_EQ(a[0].include, "probe/check.h");
  EXPECT_EQ(CheckIncludes("kv/make_cache.cc", "  #  include \"eval/buckets.h\"", kAllExist).size(), 1u);
  EXPECT_EQ(CheckIncludes("kv/formats/ggml_block_codecs.cc", "#include \"kv/config/cache_config.h\"", kAllExist).size(),
            1u);
  EXPECT_EQ(CheckIncludes("kv/store/row_store.cc", "#include \"kv/make_cache.h\"", kAllExist).size(), 1u);
  // Between decide's concepts: the gate may not use the recommendation.
  EXPECT_EQ(CheckIncludes("decide/gate/gate.cc", "#include \"decide/recommend/recommend.h\"", kAllExist).size(), 1u);
}

TEST(Layering, DownwardAndSameUnitIncludesPassSystemIncludesAreIgnored) {
  const std::string text =
      "#include <vector>\n#include \"probe/check.h\"\n#include \"eval/fidelity_metrics.h\"\n"
      "#include \"run/sampling.h\"\n#include \"kv/formats/format_table.h\"\n#include \"base/status.h\"\n";
  EXPECT_TRUE(CheckIncludes("probe/runner.cc", text, kAllExist).empty());
  EXPECT_TRUE(CheckIncludes("kv/quant_cache.cc", "#include \"kv/store/row_store.h\"", kAllExist).empty());
}

TEST(Layering, AnIncludeOfNoFileOfSrcIsReported) {
  const auto none = [](const std::string&) { return false; };
  const auto v = CheckIncludes("eval/report.cc", "#include \"support/fixtures.h\"\n", none);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].why, "names no file of src/");
  EXPECT_EQ(CheckIncludes("newlayer/x.cc", "", kAllExist).size(), 1u);  // a folder in no layer
}

TEST(Layering, TheSourceTreeKeepsTheDirection) {
  const std::filesystem::path src = RepoDir() / "src";
  ASSERT_TRUE(std::filesystem::is_directory(src)) << src;
  const std::vector<Violation> v = CheckTree(src);
  EXPECT_TRUE(v.empty()) << Describe(v);
}

}  // namespace
}  // namespace kvaudit::testing
