// Subcommand registry: each subcommand file declares its flags on a CLI11 sub-app and returns the
// function that runs it once flags are parsed.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace kvaudit::cli {

using CommandRunner = std::function<int()>;

CommandRunner AddInfoCommand(CLI::App& app);
CommandRunner AddTokenizeCommand(CLI::App& app);
CommandRunner AddGenerateCommand(CLI::App& app);
CommandRunner AddScoreCommand(CLI::App& app);
CommandRunner AddFormatsCommand(CLI::App& app);
CommandRunner AddEvalCommand(CLI::App& app);
CommandRunner AddProbeCommand(CLI::App& app);
CommandRunner AddMergeCommand(CLI::App& app);
CommandRunner AddDeployCommand(CLI::App& app);
CommandRunner AddGateCommand(CLI::App& app);
CommandRunner AddReferenceCommand(CLI::App& app);
CommandRunner AddSensitivityCommand(CLI::App& app);
CommandRunner AddRecommendCommand(CLI::App& app);
CommandRunner AddAuditCommand(CLI::App& app);
CommandRunner AddReportCommand(CLI::App& app);
CommandRunner AddServeCommand(CLI::App& app);

}  // namespace kvaudit::cli
