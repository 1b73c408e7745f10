#pragma once

#include "absl/strings/string_view.h"

#include "absl/strings/str_format.h"

namespace holdfast {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Writes one line to stderr: time, level, message. Thread-safe.
void LogLine(LogLevel level, absl::string_view message);
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
