#pragma once
// Minimal protobuf wire encoding and decoding: assembling messages from
// already encoded parts (shared resource bytes), and reading the few fields
// of a hot message in place, without a message object.

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

inline size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Size of field `field` with wire type LEN holding `length` bytes.
inline size_t LengthDelimitedSize(int field, size_t length) {
  return VarintSize((static_cast<uint64_t>(field) << 3) | 2) + VarintSize(length) + length;
}

// Appends the tag and length of field `field` with wire type LEN, for
// `length` bytes the caller appends next.
inline void AppendLengthDelimitedHeader(int field, size_t length, std::string* out) {
  AppendVarint((static_cast<uint64_t>(field) << 3) | 2, out);
  AppendVarint(length, out);
}

// Appends field `field` with wire type LEN: tag, length, bytes.
inline void AppendLengthDelimited(int field, absl::string_view bytes, std::string* out) {
  AppendVarint((static_cast<uint64_t>(field) << 3) | 2, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

// Reads the fields of one message in order. Usage:
//   WireReader reader(bytes);
//   while (reader.Next()) { switch (reader.field()) { ... reader.bytes() ... } }
//   if (!reader.ok()) { malformed }
// Only LEN fields expose bytes(); VARINT, I64 and I32 fields are skipped
// over (value() holds a VARINT's value). Groups are malformed here.
class WireReader {
 public:
  explicit WireReader(absl::string_view bytes) : rest_(bytes) {}

  bool Next() {
    if (rest_.empty() || !ok_) return false;
    uint64_t tag = 0;
    if (!ReadVarint(&tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return Fail();
    field_ = static_cast<int>(tag >> 3);
    wire_type_ = static_cast<int>(tag & 7);
    bytes_ = {};
    switch (wire_type_) {
      case 0:
        return ReadVarint(&value_) || Fail();
      case 1:
        return Skip(8);
      case 2: {
        uint64_t length = 0;
        if (!ReadVarint(&length) || length > rest_.size()) return Fail();
        bytes_ = rest_.substr(0, length);
        rest_.remove_prefix(length);
        return true;
      }
      case 5:
        return Skip(4);
      default:
        return Fail();
    }
  }

  int field() const { return field_; }
  int wire_type() const { return wire_type_; }
  bool is_bytes() const { return wire_type_ == 2; }
  absl::string_view bytes() const { return bytes_; }
  uint64_t value() const { return value_; }
  bool ok() const { return ok_; }
  // Where the next field starts.
  const char* position() const { return rest_.data(); }

 private:
  bool ReadVarint(uint64_t* out) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64 && !rest_.empty(); shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(rest_.front());
      rest_.remove_prefix(1);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *out = result;
        return true;
      }
    }
    return false;
  }
  bool Skip(size_t n) {
    if (rest_.size() < n) return Fail();
    rest_.remove_prefix(n);
    return true;
  }
  bool Fail() {
    ok_ = false;
    return false;
  }

  absl::string_view rest_;
  absl::string_view bytes_;
  uint64_t value_ = 0;
  int field_ = 0;
  int wire_type_ = 0;
  bool ok_ = true;
};

}  // namespace holdfast
