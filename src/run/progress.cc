#include "run/progress.h"

#include <unistd.h>

namespace kvaudit {

bool StderrIsTerminal() { return ::isatty(2) == 1; }

ProgressOutput StderrProgress() {
  ProgressOutput out;
  out.terminal = StderrIsTerminal();
  return out;
}

ProgressBar::ProgressBar(int64_t total, std::string label, ProgressOutput out)
    : total_(total), label_(std::move(label)), out_(out), start_(std::chrono::steady_clock::now()), last_(start_) {
  if (out_.terminal && total_ > 0) Draw();
}

void ProgressBar::Advance(int64_t units) {
  done_ += units;
  if (total_ <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (out_.terminal) {
    if (done_ < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    Draw();
  } else if (now - last_ >= out_.log_every && done_ < total_) {
    last_ = now;
    Log();
  }
}

// Linear extrapolation from the units done in this process (resumed ones are not counted).
std::string ProgressBar::Eta(double frac, double elapsed) const {
  if (done_ <= 0) return "--:--";
  const int left = static_cast<int>(elapsed / frac * (1.0 - frac) + 0.5);
  char eta[32];
  std::snprintf(eta, sizeof(eta), "%d:%02d", left / 60, left % 60);
  return eta;
}

void ProgressBar::Draw() {
  constexpr int kWidth = 30;
  const double frac = static_cast<double>(done_) / static_cast<double>(total_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char bar[kWidth + 1];
  const int fill = static_cast<int>(frac * kWidth);
  for (int i = 0; i < kWidth; ++i) bar[i] = i < fill ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(out_.stream, "\r%s [%s] %5.1f%%  %lld/%lld  ETA %s ", label_.c_str(), bar, 100.0 * frac,
               static_cast<long long>(done_), static_cast<long long>(total_), Eta(frac, elapsed).c_str());
  std::fflush(out_.stream);
}

void ProgressBar::Log() {
  const double frac = static_cast<double>(done_) / static_cast<double>(total_);
  const int elapsed =
      static_cast<int>(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  std::fprintf(out_.stream, "kvaudit: %s %lld/%lld (%.1f%%), %d:%02d elapsed, ETA %s\n", label_.c_str(),
               static_cast<long long>(done_), static_cast<long long>(total_), 100.0 * frac, elapsed / 60, elapsed % 60,
               Eta(frac, elapsed).c_str());
  std::fflush(out_.stream);
}

void ProgressBar::Finish() {
  if (!out_.terminal || total_ <= 0) return;
  std::fprintf(out_.stream, "\r%*s\r", 100, "");
  std::fflush(out_.stream);
}

}  // namespace kvaudit
