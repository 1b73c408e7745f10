#pragma once

#include <string>
#include <vector>

#include "src/model/object.h"

namespace holdfast {

// One problem with one field of an object.
struct FieldError {
  std::string path;  // e.g. "spec.routes[2].match.regex"
  std::string message;
  SourceLocation location;
  std::string ToString() const;
  bool operator==(const FieldError&) const = default;
};

// Collects every problem found while decoding or translating an object,
// instead of stopping at the first, so users fix everything in one pass.
class FieldErrors {
 public:
  void Add(std::string path, std::string message, SourceLocation location = {});
  bool empty() const { return errors_.empty(); }
  const std::vector<FieldError>& errors() const { return errors_; }
  std::string ToString() const;
  bool operator==(const FieldErrors&) const = default;

 private:
  std::vector<FieldError> errors_;
};

}  // namespace holdfast
