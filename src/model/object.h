#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace holdfast {

// Where an object or one of its fields came from, for error messages.
struct SourceLocation {
  std::string file;  // empty when not from a file (etcd key, API object)
  int line = 0;      // 1-based; 0 when unknown
  std::string ToString() const {
    if (file.empty()) return "";
    return line > 0 ? absl::StrCat(file, ":", line) : file;
  }
  bool operator==(const SourceLocation&) const = default;
};

// Identity of a gateway object. Ordered so that every iteration over objects
// is deterministic.
struct ObjectKey {
  std::string kind;
  std::string ns;
  std::string name;
  auto operator<=>(const ObjectKey&) const = default;
  std::string ToString() const {
    return ns.empty() ? absl::StrCat(kind, " ", name) : absl::StrCat(kind, " ", ns, "/", name);
  }
};

struct ObjectMeta {
  std::string name;
  std::string ns = "default";
  std::map<std::string, std::string> labels;
  SourceLocation location;
};

// A label selector: every label must match; optionally limited to namespaces.
struct Selector {
  std::map<std::string, std::string> labels;
  std::vector<std::string> namespaces;  // empty: the selecting object's namespace
  bool all_namespaces = false;          // namespaces: ["*"]
};

// A reference to another object by name (namespace defaults to the referrer's).
struct ObjectRef {
  std::string name;
  std::string ns;
};

}  // namespace holdfast
