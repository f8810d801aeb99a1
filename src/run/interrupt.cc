#include "run/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace kvaudit {
namespace {

// The published context: fixed buffers and atomics, so the handler reads them without locks or
// allocation. `ready` is false while SetInterruptContext rewrites the text.
constexpr size_t kTextMax = 512;
char g_job[64], g_records[64], g_journal[kTextMax];
std::atomic<bool> g_ready{false};
std::atomic<int64_t> g_total{0};
// Process groups to kill first; 0 = a free slot.
std::atomic<int> g_groups[kMaxWatchedGroups];

// The records the journal holds: its complete lines after the header (a line still being
// written when the signal came is not one a rerun takes). open/read/close only: signal-safe.
int64_t RecordsInJournal(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  int64_t lines = 0;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof(chunk))) > 0;) {
    for (ssize_t i = 0; i < n; ++i) lines += chunk[i] == '\n';
  }
  ::close(fd);
  return lines > 0 ? lines - 1 : 0;
}

void CopyText(char* dst, size_t size, std::string_view text) {
  const size_t n = std::min(size - 1, text.size());
  std::copy_n(text.data(), n, dst);
  dst[n] = '\0';
}

// Appends to buf[*at..size-1], keeping room for the final NUL.
void Put(char* buf, size_t size, size_t* at, const char* text) {
  while (*text && *at + 1 < size) buf[(*at)++] = *text++;
}

void PutInt(char* buf, size_t size, size_t* at, int64_t v) {
  char digits[24];
  int n = 0;
  uint64_t u = v < 0 ? 0 : static_cast<uint64_t>(v);
  do digits[n++] = static_cast<char>('0' + u % 10), u /= 10;
  while (u > 0);
  while (n > 0 && *at + 1 < size) buf[(*at)++] = digits[--n];
}

void OnInterrupt(int sig) {
  for (std::atomic<int>& g : g_groups) {
    if (const int pgid = g.load(); pgid > 0) ::kill(-pgid, SIGKILL);
  }
  char buf[1024];
  const size_t n = FormatInterruptMessage(buf, sizeof(buf));
  ssize_t ignored = ::write(2, buf, n);
  (void)ignored;
  ::signal(sig, SIG_DFL);  // the default action ends the process with the conventional status
  ::raise(sig);
}

}  // namespace

void WatchInterrupts() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
  });
}

bool KillGroupOnInterrupt(int pgid) {
  WatchInterrupts();
  for (std::atomic<int>& g : g_groups) {
    int free = 0;
    if (g.compare_exchange_strong(free, pgid)) return true;
  }
  return false;
}

void ForgetGroupOnInterrupt(int pgid) {
  for (std::atomic<int>& g : g_groups) {
    int mine = pgid;
    g.compare_exchange_strong(mine, 0);
  }
}

void SetInterruptContext(std::string_view job, std::string_view records, std::string_view journal, int64_t total) {
  g_ready.store(false);
  CopyText(g_job, sizeof(g_job), job);
  CopyText(g_records, sizeof(g_records), records);
  CopyText(g_journal, sizeof(g_journal), journal);
  g_total.store(total);
  g_ready.store(true);
}

size_t FormatInterruptMessage(char* buf, size_t size) {
  size_t at = 0;
  if (g_ready.load()) {
    Put(buf, size, &at, "\nkvaudit: interrupted after ");
    PutInt(buf, size, &at, RecordsInJournal(g_journal)), Put(buf, size, &at, " of ");
    PutInt(buf, size, &at, g_total.load());
    Put(buf, size, &at, " "), Put(buf, size, &at, g_records), Put(buf, size, &at, " of ");
    Put(buf, size, &at, g_job), Put(buf, size, &at, " (kept in "), Put(buf, size, &at, g_journal);
    Put(buf, size, &at, "); rerun the same command to resume\n");
  } else {
    Put(buf, size, &at, "\nkvaudit: interrupted before the job's first record; rerun the same command\n");
  }
  buf[at] = '\0';
  return at;
}

}  // namespace kvaudit
