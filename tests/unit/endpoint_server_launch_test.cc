// --serve-cmd's template (endpoint/server_launch.h): split as a shell splits words, without a
// shell's expansions, filled per configuration; and a started server stopped with its group.
#include "endpoint/server_launch.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/child_process.h"

namespace kvaudit {
namespace {

using Words = std::vector<std::string>;

TEST(ServeCommandTest, SplitsWordsAsAShellDoesWithoutExpanding) {
  EXPECT_EQ(*SplitServeCommand("llama-server  -m m.gguf\t--port {port}", "--serve-cmd"),
            (Words{"llama-server", "-m", "m.gguf", "--port", "{port}"}));
  EXPECT_EQ(*SplitServeCommand("srv -m '/models/my model.gguf' --alias \"a \\\"b\\\"\" x\\ y ''", "--serve-cmd"),
            (Words{"srv", "-m", "/models/my model.gguf", "--alias", "a \"b\"", "x y", ""}));
  // Single quotes keep $ and ; literal: the way to hand a wrapper script to sh -c.
  EXPECT_EQ(*SplitServeCommand("sh -c 'echo $$; exec srv --port {port}'", "--serve-cmd"),
            (Words{"sh", "-c", "echo $$; exec srv --port {port}"}));
}

TEST(ServeCommandTest, RefusesWhatNeedsAShellInOneLine) {
  for (const char* text :
       {"srv --port {port} | tee log", "srv > log", "srv $MODEL", "srv \"$HOME/m\"", "a; b", "srv `pwd`", "srv &"}) {
    const auto words = SplitServeCommand(text, "--serve-cmd");
    ASSERT_FALSE(words) << text;
    EXPECT_NE(words.error().message.find("needs a shell, and the command runs without one; hint:"), std::string::npos)
        << words.error().message;
  }
  const auto open = SplitServeCommand("srv 'unclosed", "--serve-cmd");
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().message.find("the quote ' is not closed"), std::string::npos);
  EXPECT_FALSE(SplitServeCommand("   ", "--serve-cmd"));
}

TEST(ServeCommandTest, FillsThePlaceholdersAndNeedsAPort) {
  const std::map<std::string, std::string> values = {{"port", "8123"}, {"k", "q8_0"}, {"v", "q4_0"}, {"name", "x"}};
  EXPECT_EQ(*FillServeCommand({"srv", "--port={port}", "-ctk", "{k}", "-ctv", "{v}", "{}x", "{\"a\":{}}"}, values,
                              "--serve-cmd"),
            (Words{"srv", "--port=8123", "-ctk", "q8_0", "-ctv", "q4_0", "{}x", "{\"a\":{}}"}));
  const auto unknown = FillServeCommand({"srv", "{port}", "{model}"}, values, "--serve-cmd");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("{model} is not a placeholder here"), std::string::npos);
  const auto no_port = FillServeCommand({"srv", "-ctk", "{k}"}, values, "--serve-cmd");
  ASSERT_FALSE(no_port);
  EXPECT_NE(no_port.error().message.find("has no {port}"), std::string::npos);
}

TEST(LaunchedServerTest, AServerThatExitsIsOneLineWithItsLogAndAStoppedOneTakesItsGroup) {
  const std::string log = (std::filesystem::temp_directory_path() / "kvaudit-launch-test.log").string();
  LaunchOptions exits{"k=q4_0,v=q4_0", {"sh", "-c", "echo loading; echo bad flag -ctk; exit 3"}, 1, log, 30, 5};
  auto s = LaunchedServer::Spawn(exits);
  ASSERT_TRUE(s) << s.error().message;
  const Status ready = (*s)->WaitReady();
  ASSERT_FALSE(ready);
  EXPECT_NE(ready.error().message.find("the server for k=q4_0,v=q4_0 exited with status 3 before it was ready "
                                       "(its log's last line: bad flag -ctk); hint: read " +
                                       log),
            std::string::npos)
      << ready.error().message;

  // A "server" that never answers, with a child of its own: Stop() ends both.
  const std::string pids = log + ".pids";
  LaunchOptions hangs{"hang", {"sh", "-c", "sleep 60 & echo $! > " + pids + "; exec sleep 60"}, 1, log, 0.3, 5};
  auto h = LaunchedServer::Spawn(hangs);
  ASSERT_TRUE(h);
  const pid_t leader = (*h)->pid();
  const Status late = (*h)->WaitReady();
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message.find("was not ready within 0.3 s"), std::string::npos) << late.error().message;
  pid_t child = 0;
  std::ifstream(pids) >> child;
  ASSERT_GT(child, 0);
  EXPECT_TRUE(testing::ProcessGone(leader, 5000));
  EXPECT_TRUE(testing::ProcessGone(child, 5000));
  std::filesystem::remove(log), std::filesystem::remove(pids);
}

TEST(LaunchedServerTest, AProgramNotOnPathIsRefusedBeforeAnythingStarts) {
  LaunchOptions o{"q8", {"no-such-server-xyz", "--port", "1"}, 1, "/dev/null", 1, 1};
  const auto s = LaunchedServer::Spawn(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("no-such-server-xyz is not on PATH; hint:"), std::string::npos);
}

}  // namespace
}  // namespace kvaudit
