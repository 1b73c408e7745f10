#include "src/admin/http_message.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace holdfast {
namespace {

// RFC 9110 tchar: what a method or a field name may contain.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(static_cast<unsigned char>(c));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Percent-decodes `s` ('+' is a space in a query); nullopt on a bad escape.
std::optional<std::string> PercentDecode(absl::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(plus_is_space && s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

HttpParse Error(int status, std::string message) {
  HttpParse parse;
  parse.state = HttpParse::State::kError;
  parse.error_status = status;
  parse.error = std::move(message);
  return parse;
}

// Fills path and query from an origin-form target ("/path?a=b").
bool ParseTarget(absl::string_view target, HttpRequest& request) {
  if (target.empty() || target.front() != '/') return false;
  size_t question = target.find('?');
  std::optional<std::string> path = PercentDecode(target.substr(0, question), false);
  if (!path.has_value()) return false;
  request.path = std::move(*path);
  if (question == absl::string_view::npos) return true;
  for (absl::string_view pair :
       absl::StrSplit(target.substr(question + 1), '&', absl::SkipEmpty())) {
    size_t equals = pair.find('=');
    std::optional<std::string> key = PercentDecode(pair.substr(0, equals), true);
    std::optional<std::string> value =
        PercentDecode(equals == absl::string_view::npos ? "" : pair.substr(equals + 1), true);
    if (!key.has_value() || !value.has_value()) return false;
    request.query[*key] = std::move(*value);
  }
  return true;
}

// "GET /path HTTP/1.1"; 0 when it parses, else the status to answer.
int ParseRequestLine(absl::string_view line, HttpRequest& request) {
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !IsToken(parts[0])) return 400;
  request.method = std::string(parts[0]);
  absl::string_view version = parts[2];
  if (!absl::StartsWith(version, "HTTP/") || version.size() != 8 || version[6] != '.' ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[5])) ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[7]))) {
    return 400;
  }
  if (version[5] != '1') return 505;
  request.minor_version = version[7] - '0';
  if (!ParseTarget(parts[1], request)) return 400;
  return 0;
}

// "Name: value"; false when malformed (including obsolete line folding and
// control characters that could smuggle a line end).
bool ParseField(absl::string_view line, HttpRequest& request) {
  size_t colon = line.find(':');
  if (colon == absl::string_view::npos || !IsToken(line.substr(0, colon))) return false;
  absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
  for (char c : value) {
    if (c == '\0' || c == '\r' || c == '\n') return false;
  }
  request.headers.emplace_back(absl::AsciiStrToLower(line.substr(0, colon)), std::string(value));
  return true;
}

// 0 when the request's body (announced by Content-Length, if any) is within
// `max_body_bytes`, else the status that refuses it; sets content_length.
int CheckBody(HttpRequest& request, size_t max_body_bytes) {
  for (const auto& [name, value] : request.headers) {
    if (name == "transfer-encoding") return 413;  // a body only with its length
    if (name == "content-length") {
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) return 400;
      const size_t digits = value.size() - std::min(value.find_first_not_of('0'), value.size());
      if (digits > 18 || !absl::SimpleAtoi(value, &request.content_length)) return 413;
      if (request.content_length > max_body_bytes) return 413;
    }
  }
  return 0;
}

}  // namespace

absl::string_view HttpRequest::Header(absl::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (field == name) return value;
  }
  return "";
}

bool HttpRequest::KeepAlive() const {
  bool close = false;
  bool keep_alive = false;
  for (const auto& [field, value] : headers) {
    if (field != "connection") continue;
    for (absl::string_view option : absl::StrSplit(value, ',')) {
      option = absl::StripAsciiWhitespace(option);
      if (absl::EqualsIgnoreCase(option, "close")) close = true;
      if (absl::EqualsIgnoreCase(option, "keep-alive")) keep_alive = true;
    }
  }
  if (close) return false;
  return minor_version >= 1 || keep_alive;
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

HttpParse ParseRequestHead(absl::string_view buffer, size_t max_head_bytes, size_t max_body_bytes) {
  HttpParse parse;
  size_t start = 0;
  bool seen_request_line = false;
  while (true) {
    size_t newline = buffer.find('\n', start);
    if (newline == absl::string_view::npos) {
      if (buffer.size() > max_head_bytes) return Error(431, "request head too large");
      return parse;  // incomplete
    }
    if (newline + 1 > max_head_bytes) return Error(431, "request head too large");
    absl::string_view line = buffer.substr(start, newline - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = newline + 1;
    if (!seen_request_line) {
      // RFC 9112 2.2: ignore empty lines before the request line (some
      // clients send a CRLF after a request).
      if (line.empty()) continue;
      if (int status = ParseRequestLine(line, parse.request); status != 0) {
        return Error(status, "malformed request line");
      }
      seen_request_line = true;
      continue;
    }
    if (line.empty()) break;
    if (!ParseField(line, parse.request)) return Error(400, "malformed header field");
  }
  if (int status = CheckBody(parse.request, max_body_bytes); status != 0) {
    return Error(status,
                 status == 413 ? "request body not accepted or too large" : "bad Content-Length");
  }
  parse.state = HttpParse::State::kComplete;
  parse.consumed = start;
  return parse;
}

absl::string_view HttpReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string SerializeResponse(const HttpResponse& response, bool head_only, bool keep_alive) {
  std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ", HttpReason(response.status),
                                 "\r\nContent-Type: ", response.content_type,
                                 "\r\nContent-Length: ", response.body.size(), "\r\n");
  for (const auto& [name, value] : response.headers)
    absl::StrAppend(&out, name, ": ", value, "\r\n");
  if (!keep_alive) absl::StrAppend(&out, "Connection: close\r\n");
  absl::StrAppend(&out, "\r\n");
  if (!head_only) absl::StrAppend(&out, response.body);
  return out;
}

}  // namespace holdfast
