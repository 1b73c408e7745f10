#include "src/common/log.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/common/clock.h"
#include "src/common/utf8.h"

namespace holdfast {
namespace {
std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<LogFormat> log_format{LogFormat::kText};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

// A JSON string body: quotes, backslashes and control characters escaped,
// bytes that are not UTF-8 replaced by U+FFFD, so every line parses.
void AppendJsonString(absl::string_view text, std::string& out) {
  while (!text.empty()) {
    const size_t bad = InvalidUtf8Offset(text);
    for (char c : text.substr(0, bad)) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            absl::StrAppend(&out, "\\u00",
                            absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
          } else {
            out += c;
          }
      }
    }
    if (bad == absl::string_view::npos) break;
    out += "\\ufffd";
    text.remove_prefix(bad + 1);
  }
}

}  // namespace

void SetMinLogLevel(LogLevel level) { min_level = static_cast<int>(level); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= min_level; }
void SetLogFormat(LogFormat format) { log_format = format; }

std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          absl::string_view message) {
  const std::string when = FormatTimestamp(time);
  if (format == LogFormat::kText) {
    return absl::StrFormat("%s %-5s %s\n", when, LevelName(level), message);
  }
  std::string line = absl::StrCat("{\"time\":\"", when, "\",\"level\":\"",
                                  absl::AsciiStrToLower(LevelName(level)), "\",\"msg\":\"");
  AppendJsonString(message, line);
  line += "\"}\n";
  return line;
}

void LogLine(LogLevel level, absl::string_view message) {
  std::string line = FormatLogLine(log_format.load(), absl::Now(), level, message);
  // One fwrite per line keeps lines from different threads whole.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace holdfast
