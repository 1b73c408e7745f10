#include "src/source/json_resource_document.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

namespace holdfast {
namespace {

using Json = nlohmann::json;

// Reads characters for the JSON parser and leaves in `*end_` where its
// reading got to, which is how a SAX handler learns a value's line.
class TrackedChars {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackedChars(const char* at, const char** end) : at_(at), end_(end) {}
  reference operator*() const { return *at_; }
  TrackedChars& operator++() {
    *end_ = ++at_;
    return *this;
  }
  TrackedChars operator++(int) {
    TrackedChars before = *this;
    ++*this;
    return before;
  }
  bool operator==(const TrackedChars& other) const { return at_ == other.at_; }

 private:
  const char* at_;
  const char** end_;
};

// Lines of positions that only move forward, counted once.
class LineCounter {
 public:
  explicit LineCounter(const char* begin) : counted_to_(begin) {}
  int LineBefore(const char* position) {
    if (position > counted_to_) {
      line_ += static_cast<int>(std::count(counted_to_, position, '\n'));
      counted_to_ = position;
    }
    return line_;
  }

 private:
  const char* counted_to_;
  int line_ = 1;
};

// Builds the document and notes the lines of the values rejections name.
// Every callback returns false to give up (the caller falls back to YAML).
class DocumentBuilder {
 public:
  DocumentBuilder(const char* begin, const char** read_to, int max_depth)
      : lines_(begin), read_to_(read_to), max_depth_(max_depth) {}

  bool null() { return Put(nullptr); }
  bool boolean(bool value) { return Put(value); }
  bool number_integer(Json::number_integer_t value) { return Put(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return Put(value); }
  bool number_float(Json::number_float_t value, const std::string& text) {
    if (!std::isfinite(value)) return false;
    // An integer beyond 64 bits: the YAML reader keeps its digits.
    if (text.find_first_of(".eE") == std::string::npos) return Put(text);
    return Put(value);
  }
  bool string(std::string& value) { return Put(std::move(value)); }
  bool binary(Json::binary_t&) { return false; }
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& name) {
    key_ = std::move(name);
    if (open_.size() == 1 && document_.root.contains(key_)) return false;
    if (open_.size() == 1 && key_ == "resources") {
      document_.resources_line = 0;
      document_.resource_lines.clear();
      resources_ = nullptr;
      next_is_resources_ = true;
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

  JsonResourceDocument Take() { return std::move(document_); }

 private:
  // The line of the value just read: its last character read is its own,
  // or (after a number) the one that ended it.
  int Line() { return lines_.LineBefore(*read_to_ - 1); }

  Json* Place(Json value) {
    const int line = Line();
    if (open_.empty()) {
      if (!value.is_object()) return nullptr;
      document_.root = std::move(value);
      document_.root_line = line;
      return &document_.root;
    }
    Json& parent = *open_.back();
    if (next_is_resources_) document_.resources_line = line;
    next_is_resources_ = false;
    if (parent.is_array()) {
      if (open_.size() == 2 && &parent == resources_) document_.resource_lines.push_back(line);
      parent.push_back(std::move(value));
      return &parent.back();
    }
    Json& slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }

  bool Put(Json value) { return Place(std::move(value)) != nullptr; }

  bool Open(Json container) {
    if (static_cast<int>(open_.size()) >= max_depth_) return false;
    const bool is_resources = next_is_resources_ && container.is_array();
    Json* placed = Place(std::move(container));
    if (placed == nullptr) return false;
    if (is_resources) resources_ = placed;
    open_.push_back(placed);
    return true;
  }

  bool Close() {
    open_.pop_back();
    return true;
  }

  LineCounter lines_;
  const char** read_to_;
  const int max_depth_;
  JsonResourceDocument document_;
  std::vector<Json*> open_;  // containers being filled; a child never outlives its place
  std::string key_;
  bool next_is_resources_ = false;
  const Json* resources_ = nullptr;
};

bool HasBareCarriageReturn(std::string_view text) {
  for (size_t at = text.find('\r'); at != std::string_view::npos; at = text.find('\r', at + 1)) {
    if (at + 1 == text.size() || text[at + 1] != '\n') return true;
  }
  return false;
}

}  // namespace

std::optional<JsonResourceDocument> ReadJsonResourceDocument(std::string_view text,
                                                             int max_depth) {
  // nlohmann's lexer takes a NUL byte for the end of the text, where YAML
  // reads on; yaml-cpp reads a value after a bare carriage return (one not
  // followed by a line feed) otherwise than JSON does.
  if (text.find('\0') != std::string_view::npos || HasBareCarriageReturn(text)) {
    return std::nullopt;
  }
  const char* read_to = text.data();
  DocumentBuilder builder(text.data(), &read_to, max_depth);
  TrackedChars begin(text.data(), &read_to);
  TrackedChars end(text.data() + text.size(), &read_to);
  if (!Json::sax_parse(begin, end, &builder, nlohmann::detail::input_format_t::json,
                       /*strict=*/true)) {
    return std::nullopt;
  }
  return builder.Take();
}

}  // namespace holdfast
