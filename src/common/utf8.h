#pragma once
// Well-formed UTF-8, as protobuf strings and JSON output require.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace holdfast {

// Offset of the first byte that does not belong to well-formed UTF-8 (an
// overlong form, a surrogate, past U+10FFFF, or a cut sequence), or npos.
inline size_t InvalidUtf8Offset(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    // Most text (names, keys) is ASCII: skip it eight bytes at a time.
    uint64_t word;
    if (i + 8 <= text.size() &&
        (std::memcpy(&word, text.data() + i, 8), (word & 0x8080808080808080ull) == 0)) {
      i += 8;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra;
    uint32_t code;
    if ((c & 0xe0) == 0xc0) {
      extra = 1, code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2, code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3, code = c & 0x07;
    } else {
      return i;
    }
    if (i + extra >= text.size()) return i;
    for (size_t k = 1; k <= extra; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return i;
      code = (code << 6) | (next & 0x3f);
    }
    static constexpr uint32_t kMinimum[] = {0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[extra] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return i;
    i += extra + 1;
  }
  return absl::string_view::npos;
}

inline bool IsValidUtf8(absl::string_view text) {
  return InvalidUtf8Offset(text) == absl::string_view::npos;
}

}  // namespace holdfast
