// kvaudit tokenize: text -> token ids (and pieces) with the model's own tokenizer.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::cli {
namespace {

struct TokenizeFlags {
  ModelFlags model;
  std::string text, text_file;
  bool no_bos = false;
  bool pieces = false;
};

int RunTokenize(const TokenizeFlags& f) {
  auto model_path = f.model.Resolve();
  if (!model_path) return ReportError(model_path.error());
  auto loaded = Model::Load(*model_path);
  if (!loaded) return ReportError(loaded.error());
  const Tokenizer* tok = (*loaded)->tokenizer();
  if (!tok)
    return ReportError(
        BadInput(*model_path + ": model has no tokenizer; hint: use a model with tokenizer.json or a GGUF vocabulary"));
  std::string text = f.text;
  if (!f.text_file.empty()) {
    auto read = ReadTextFile(f.text_file);
    if (!read) return ReportError(read.error());
    text = *read;
  }
  const std::vector<int32_t> ids = tok->Encode(text, tok->add_bos_default() && !f.no_bos);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (f.pieces) {
      const int32_t one[1] = {ids[i]};
      std::printf("%d\t%s\n", ids[i], tok->Decode(one, /*render_special=*/true).c_str());
    } else {
      std::printf(i ? " %d" : "%d", ids[i]);
    }
  }
  if (!f.pieces) std::printf("\n");
  std::fprintf(stderr, "kvaudit: %zu tokens\n", ids.size());
  return 0;
}

}  // namespace

CommandRunner AddTokenizeCommand(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  f->model.Add(app);
  auto* text = app.add_option("--text", f->text, "text to tokenize");
  auto* file = app.add_option("--text-file", f->text_file,
                              "file whose raw bytes are tokenized as they are (no document parsing)");
  text->excludes(file);
  file->excludes(text);
  app.add_flag("--no-bos", f->no_bos, "do not prepend BOS even if the model adds it");
  app.add_flag("--pieces", f->pieces, "print one 'id<TAB>piece' line per token");
  return [f] {
    if (f->text.empty() && f->text_file.empty()) {
      return ReportError(BadInput("tokenize needs --text or --text-file; hint: kvaudit tokenize --help"));
    }
    return RunTokenize(*f);
  };
}

}  // namespace kvaudit::cli
