#include "src/model/field_errors.h"

#include "absl/strings/str_join.h"

namespace holdfast {

std::string FieldError::ToString() const {
  std::string where = location.ToString();
  return absl::StrCat(where.empty() ? "" : absl::StrCat(where, ": "), path,
                      path.empty() ? "" : ": ", message);
}

void FieldErrors::Add(std::string path, std::string message, SourceLocation location) {
  errors_.push_back({std::move(path), std::move(message), std::move(location)});
}

std::string FieldErrors::ToString() const {
  std::vector<std::string> lines;
  for (const FieldError& e : errors_) lines.push_back(e.ToString());
  return absl::StrJoin(lines, "\n");
}

}  // namespace holdfast
