// Fuzz target: the admin endpoint's request parser, which reads bytes from
// anyone who can reach the admin port. It must never crash, never consume
// more than it was given, and answer every refusal with a status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "src/admin/http_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view buffer(reinterpret_cast<const char*>(data), size);
  // Pipelined requests: parse head after head, as the server does.
  while (!buffer.empty()) {
    holdfast::HttpParse parse = holdfast::ParseRequestHead(buffer, 16 << 10);
    if (parse.state != holdfast::HttpParse::State::kComplete) {
      if (parse.state == holdfast::HttpParse::State::kError && parse.error_status < 400) {
        std::abort();
      }
      return 0;
    }
    if (parse.consumed == 0 || parse.consumed > buffer.size()) std::abort();
    buffer.remove_prefix(parse.consumed);
  }
  return 0;
}
