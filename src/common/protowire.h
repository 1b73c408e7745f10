#pragma once
// Minimal protobuf wire encoding for assembling messages from already
// encoded parts (shared resource bytes), without a message object.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace holdfast {

inline void AppendVarint(uint64_t value, std::string* out) {
  char buf[10];
  int n = 0;
  do {
    uint8_t byte = value & 0x7f;
    value >>= 7;
    buf[n++] = static_cast<char>(value ? (byte | 0x80) : byte);
  } while (value);
  out->append(buf, n);
}

// Appends field `field` with wire type LEN: tag, length, bytes.
inline void AppendLengthDelimited(int field, absl::string_view bytes, std::string* out) {
  AppendVarint((static_cast<uint64_t>(field) << 3) | 2, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

}  // namespace holdfast
