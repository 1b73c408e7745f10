#include "src/common/log.h"

#include <atomic>
#include <cstdio>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace holdfast {
namespace {
std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}
}  // namespace

void SetMinLogLevel(LogLevel level) { min_level = static_cast<int>(level); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= min_level; }

void LogLine(LogLevel level, absl::string_view message) {
  std::string line = absl::StrFormat(
      "%s %-5s %s\n", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      LevelName(level), message);
  // One fwrite per line keeps lines from different threads whole.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace holdfast
