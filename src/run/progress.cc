#include "run/progress.h"

#include <unistd.h>

#include <cstdio>

namespace kvaudit {

bool StderrIsTerminal() { return ::isatty(2) == 1; }

ProgressBar::ProgressBar(int64_t total, bool enabled, std::string label)
    : total_(total),
      enabled_(enabled && total > 0),
      label_(std::move(label)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (enabled_) Draw();
}

void ProgressBar::Advance(int64_t units) {
  done_ += units;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done_ < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw();
}

void ProgressBar::Draw() {
  constexpr int kWidth = 30;
  const double frac = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char eta[32] = "--:--";
  if (done_ > 0) {
    // Linear extrapolation from the units done in this process (resumed windows are not counted).
    const int left = static_cast<int>(elapsed / frac * (1.0 - frac) + 0.5);
    std::snprintf(eta, sizeof(eta), "%d:%02d", left / 60, left % 60);
  }
  char bar[kWidth + 1];
  const int fill = static_cast<int>(frac * kWidth);
  for (int i = 0; i < kWidth; ++i) bar[i] = i < fill ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\r%s [%s] %5.1f%%  %lld/%lld  ETA %s ", label_.c_str(), bar, 100.0 * frac,
               static_cast<long long>(done_), static_cast<long long>(total_), eta);
  std::fflush(stderr);
}

void ProgressBar::Finish() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r%*s\r", 100, "");
  std::fflush(stderr);
}

}  // namespace kvaudit
