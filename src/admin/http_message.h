#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace holdfast {

// One HTTP/1.x request head. A body is accepted only where the caller allows
// one (the admission webhook), announced by Content-Length.
struct HttpRequest {
  std::string method;                        // as sent: "GET", "HEAD", ...
  std::string path;                          // the target up to '?', percent-decoded
  std::map<std::string, std::string> query;  // percent-decoded; the last value wins
  int minor_version = 1;                     // HTTP/1.<minor_version>
  size_t content_length = 0;                 // bytes of body after the head
  // Header fields in order, names lower-cased, values trimmed.
  std::vector<std::pair<std::string, std::string>> headers;

  // The value of the first field named `name` (lower case), or "".
  absl::string_view Header(absl::string_view name) const;
  // Whether the connection may carry another request after this one.
  bool KeepAlive() const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  // Extra header fields (Content-Type, Content-Length and Connection are
  // written by SerializeResponse).
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpResponse Text(int status, std::string body);
};

// Result of looking for one request head at the front of a buffer.
struct HttpParse {
  enum class State {
    kIncomplete,  // no blank line yet: read more (up to the size cap)
    kComplete,    // `request` is filled; `consumed` bytes belong to it
    kError,       // malformed or refused: answer `error_status` and close
  };
  State state = State::kIncomplete;
  HttpRequest request;
  size_t consumed = 0;
  int error_status = 0;
  std::string error;
};

// Parses the request head at the front of `buffer` (RFC 9112: request line,
// header fields, empty line; a bare LF is accepted as a line end). A head
// longer than `max_head_bytes` is an error (431) even before its end is seen,
// so a caller never buffers more than that. A body is refused (413) when it
// is longer than `max_body_bytes` (0: the admin endpoint takes no input) or
// announced by Transfer-Encoding instead of Content-Length.
HttpParse ParseRequestHead(absl::string_view buffer, size_t max_head_bytes,
                           size_t max_body_bytes = 0);

// The bytes of a complete response. `head_only` (a HEAD request) leaves the
// body out but keeps its Content-Length; `keep_alive` false adds
// "Connection: close".
std::string SerializeResponse(const HttpResponse& response, bool head_only, bool keep_alive);

// "Not Found" for 404, and so on; "Unknown" for codes the server never sends.
absl::string_view HttpReason(int status);

}  // namespace holdfast
