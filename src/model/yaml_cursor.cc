#include "src/model/yaml_cursor.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace holdfast {

std::optional<absl::Duration> ParseDuration(const std::string& text) {
  absl::Duration d;
  if (absl::ParseDuration(text, &d) && d >= absl::ZeroDuration() && d != absl::InfiniteDuration()) {
    return d;
  }
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds) && seconds >= 0) return absl::Seconds(seconds);
  return std::nullopt;
}

YamlCursor::YamlCursor(DocNode node, std::string path, std::string file, FieldErrors* errors)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)), errors_(errors) {
  if (!node_.IsMap()) Error("expected a map");
}

SourceLocation YamlCursor::location() const { return {file_, node_.Line()}; }

bool YamlCursor::Has(const std::string& name) const {
  std::optional<DocNode> value = node_.Find(name);
  return value && !value->IsNull();
}

std::string YamlCursor::Child(const std::string& name) const {
  return path_.empty() ? name : absl::StrCat(path_, ".", name);
}

void YamlCursor::Error(const std::string& message) const {
  errors_->Add(path_, message, location());
}

void YamlCursor::FieldError(const std::string& name, const std::string& message) const {
  std::optional<DocNode> value = node_.Find(name);
  errors_->Add(Child(name), message, {file_, value ? value->Line() : node_.Line()});
}

void YamlCursor::ItemError(const std::string& list, size_t index,
                           const std::string& message) const {
  int line = node_.Line();
  std::optional<DocNode> items = node_.Find(list);
  if (items && items->IsSequence() && index < items->size()) line = (*items)[index].Line();
  errors_->Add(absl::StrCat(Child(list), "[", index, "]"), message, {file_, line});
}

std::optional<DocNode> YamlCursor::Get(const std::string& name, bool required) {
  read_.insert(name);
  if (!node_.IsMap()) return std::nullopt;
  std::optional<DocNode> value = node_.Find(name);
  if (!value || value->IsNull()) {
    if (required) FieldError(name, "required");
    return std::nullopt;
  }
  return value;
}

bool YamlCursor::String(const std::string& name, std::string* out, bool required) {
  return Scalar(name, out, required, /*multiline=*/false);
}

bool YamlCursor::Text(const std::string& name, std::string* out, bool required) {
  return Scalar(name, out, required, /*multiline=*/true);
}

bool YamlCursor::CheckOneLine(const std::string& path, const std::string& value, int line) {
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = value[i];
    if (c >= 0x20 && c != 0x7f) continue;
    errors_->Add(path,
                 absl::StrFormat("must be one line without control characters (found 0x%02x at "
                                 "offset %d)",
                                 c, i),
                 {file_, line});
    return false;
  }
  return true;
}

bool YamlCursor::Scalar(const std::string& name, std::string* out, bool required, bool multiline) {
  auto value = Get(name, required);
  if (!value) return !required;
  if (!value->IsScalar()) {
    FieldError(name, "expected a string");
    return false;
  }
  std::string text = value->Scalar();
  if (multiline ? text.find('\0') != std::string::npos
                : !CheckOneLine(Child(name), text, value->Line())) {
    if (multiline) FieldError(name, "must not contain a NUL byte");
    return false;
  }
  *out = std::move(text);
  if (required && out->empty()) {
    FieldError(name, "must not be empty");
    return false;
  }
  return true;
}

bool YamlCursor::Uint(const std::string& name, uint32_t* out, uint32_t min, uint32_t max,
                      bool required) {
  auto value = Get(name, required);
  if (!value) return !required;
  uint64_t v = 0;
  if (!value->IsScalar() || !absl::SimpleAtoi(value->Scalar(), &v)) {
    FieldError(name, "expected a non-negative integer");
    return false;
  }
  if (v < min || v > max) {
    FieldError(name, absl::StrCat("must be between ", min, " and ", max, ", got ", v));
    return false;
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

bool YamlCursor::Int(const std::string& name, int32_t* out) {
  auto value = Get(name, false);
  if (!value) return true;
  if (!value->IsScalar() || !absl::SimpleAtoi(value->Scalar(), out)) {
    FieldError(name, "expected an integer");
    return false;
  }
  return true;
}

bool YamlCursor::Bool(const std::string& name, bool* out) {
  auto value = Get(name, false);
  if (!value) return true;
  const std::string s = value->IsScalar() ? value->Scalar() : "";
  if (s == "true") {
    *out = true;
  } else if (s == "false") {
    *out = false;
  } else {
    FieldError(name, "expected true or false");
    return false;
  }
  return true;
}

bool YamlCursor::Duration(const std::string& name, absl::Duration* out, bool required) {
  auto value = Get(name, required);
  if (!value) return !required;
  std::optional<absl::Duration> d =
      value->IsScalar() ? ParseDuration(value->Scalar()) : std::nullopt;
  if (!d) {
    FieldError(name, "expected a duration such as 500ms, 5s or 1m");
    return false;
  }
  *out = *d;
  return true;
}

bool YamlCursor::OptionalDuration(const std::string& name, std::optional<absl::Duration>* out) {
  if (!Has(name)) {
    read_.insert(name);
    return true;
  }
  absl::Duration d;
  if (!Duration(name, &d)) return false;
  *out = d;
  return true;
}

bool YamlCursor::StringList(const std::string& name, std::vector<std::string>* out) {
  auto value = Get(name, false);
  if (!value) return true;
  if (!value->IsSequence()) {
    FieldError(name, "expected a list of strings");
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < value->size(); ++i) {
    const DocNode item = (*value)[i];
    if (!item.IsScalar()) {
      errors_->Add(absl::StrCat(Child(name), "[", i, "]"), "expected a string",
                   {file_, item.Line()});
      ok = false;
      continue;
    }
    const std::string item_path = absl::StrCat(Child(name), "[", i, "]");
    std::string text = item.Scalar();
    if (!CheckOneLine(item_path, text, item.Line())) {
      ok = false;
      continue;
    }
    out->push_back(std::move(text));
  }
  return ok;
}

bool YamlCursor::StringMap(const std::string& name, std::map<std::string, std::string>* out) {
  auto value = Get(name, false);
  if (!value) return true;
  if (!value->IsMap()) {
    FieldError(name, "expected a map of strings");
    return false;
  }
  bool ok = true;
  for (const DocEntry& entry : value->Entries()) {
    if (!entry.key || !entry.value.IsScalar()) {
      errors_->Add(Child(name), "keys and values must be strings", {file_, entry.key_line});
      ok = false;
      continue;
    }
    const std::string entry_path = absl::StrCat(Child(name), ".", *entry.key);
    const std::string text = entry.value.Scalar();
    if (!CheckOneLine(Child(name), *entry.key, entry.key_line) ||
        !CheckOneLine(entry_path, text, entry.value.Line())) {
      ok = false;
      continue;
    }
    (*out)[*entry.key] = text;
  }
  return ok;
}

void YamlCursor::List(const std::string& name, const std::function<void(YamlCursor&)>& each,
                      bool required) {
  auto value = Get(name, required);
  if (!value) return;
  if (!value->IsSequence()) {
    FieldError(name, "expected a list");
    return;
  }
  for (size_t i = 0; i < value->size(); ++i) {
    YamlCursor item((*value)[i], absl::StrCat(Child(name), "[", i, "]"), file_, errors_);
    if (!item.IsMap()) continue;
    each(item);
  }
}

std::optional<YamlCursor> YamlCursor::Map(const std::string& name) {
  auto value = Get(name, false);
  if (!value) return std::nullopt;
  if (!value->IsMap()) {
    FieldError(name, "expected a map");
    return std::nullopt;
  }
  return YamlCursor(*value, Child(name), file_, errors_);
}

void YamlCursor::RejectUnknownFields() {
  for (const DocEntry& entry : node_.Entries()) {
    const std::string key = entry.key.value_or("?");
    if (!read_.contains(key)) errors_->Add(Child(key), "unknown field", {file_, entry.key_line});
  }
}

}  // namespace holdfast
