#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/time/time.h"
#include "src/model/doc_node.h"
#include "src/model/field_errors.h"

namespace holdfast {

// Reads one map of a document (YAML, or JSON built in memory) field by
// field, recording every problem with its field path and line in a
// FieldErrors, and reporting fields nobody asked for.
class YamlCursor {
 public:
  YamlCursor(DocNode node, std::string path, std::string file, FieldErrors* errors);

  const std::string& path() const { return path_; }
  SourceLocation location() const;
  bool IsMap() const { return node_.IsMap(); }
  bool Has(const std::string& name) const;

  // Each reader returns false (and records why) when the field is present
  // but invalid, or absent and required; absent optional fields leave *out.
  //
  // Strings (also in lists and maps) are one line without control
  // characters: they end up in names, headers and paths, where Envoy
  // refuses NUL, CR and LF and would refuse the whole resource. Text may
  // span lines (bodies, PEM blocks) but holds no NUL.
  bool String(const std::string& name, std::string* out, bool required = false);
  bool Text(const std::string& name, std::string* out, bool required = false);
  bool Uint(const std::string& name, uint32_t* out, uint32_t min = 0, uint32_t max = UINT32_MAX,
            bool required = false);
  bool Int(const std::string& name, int32_t* out);
  bool Bool(const std::string& name, bool* out);
  bool Duration(const std::string& name, absl::Duration* out, bool required = false);
  bool OptionalDuration(const std::string& name, std::optional<absl::Duration>* out);
  bool StringList(const std::string& name, std::vector<std::string>* out);
  bool StringMap(const std::string& name, std::map<std::string, std::string>* out);
  // Calls `each` for every item of a list of maps.
  void List(const std::string& name, const std::function<void(YamlCursor&)>& each,
            bool required = false);
  // A nested map; nullopt when absent (or not a map, which is recorded).
  std::optional<YamlCursor> Map(const std::string& name);

  void Error(const std::string& message) const;
  void FieldError(const std::string& name, const std::string& message) const;
  // An error in item `index` of the list field `list`, at the item's line.
  void ItemError(const std::string& list, size_t index, const std::string& message) const;
  // Accepts a field without reading it (RejectUnknownFields passes it over).
  void Ignore(const std::string& name) { read_.insert(name); }
  // Records every key that no reader asked for as unknown.
  void RejectUnknownFields();

 private:
  std::optional<DocNode> Get(const std::string& name, bool required);
  bool Scalar(const std::string& name, std::string* out, bool required, bool multiline);
  // Records a control character in `value` at `path` (on `line`); false if
  // there is one.
  bool CheckOneLine(const std::string& path, const std::string& value, int line);
  std::string Child(const std::string& name) const;

  DocNode node_;
  std::string path_;
  std::string file_;
  FieldErrors* errors_;
  std::set<std::string> read_;
};

// Parses "1.5s", "100ms", "2m", "1h" (also a bare number of seconds).
std::optional<absl::Duration> ParseDuration(const std::string& text);

}  // namespace holdfast
