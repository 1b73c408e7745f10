#pragma once

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace holdfast {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

enum class LogFormat {
  kText,  // 2026-12-02T04:05:06.789Z INFO  message
  kJson,  // {"time":"2026-12-02T04:05:06.789Z","level":"info","msg":"message"}
};

// Writes one line to stderr: time, level, message. Thread-safe.
void LogLine(LogLevel level, absl::string_view message);
// How lines are written (default kText); set once at start.
void SetLogFormat(LogFormat format);
// One line in `format`, with its newline.
std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          absl::string_view message);
// Lines below this level are dropped (default kInfo).
void SetMinLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);

template <typename... Args>
void Logf(LogLevel level, const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(level)) LogLine(level, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogInfo(const absl::FormatSpec<Args...>& format, const Args&... args) {
  Logf(LogLevel::kInfo, format, args...);
}
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& format, const Args&... args) {
  Logf(LogLevel::kWarning, format, args...);
}
template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  Logf(LogLevel::kError, format, args...);
}
template <typename... Args>
void LogDebug(const absl::FormatSpec<Args...>& format, const Args&... args) {
  Logf(LogLevel::kDebug, format, args...);
}

}  // namespace holdfast
