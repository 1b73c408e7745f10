#include "src/source/yaml_json.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

// Hand-written scanners, not std::regex: libstdc++'s regex recurses once
// per character and overflows the stack on a long run of digits.
size_t SkipDigits(const std::string& s, size_t i) {
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i;
}

size_t SkipSign(const std::string& s, size_t i) {
  return i < s.size() && (s[i] == '-' || s[i] == '+') ? i + 1 : i;
}

// [-+]?(0|[1-9][0-9]*)
bool IsInteger(const std::string& s) {
  size_t start = SkipSign(s, 0);
  size_t end = SkipDigits(s, start);
  if (end == start || end != s.size()) return false;
  return s[start] != '0' || end == start + 1;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsFloat(const std::string& s) {
  size_t i = SkipSign(s, 0);
  size_t int_end = SkipDigits(s, i);
  bool has_int = int_end > i;
  i = int_end;
  if (i < s.size() && s[i] == '.') {
    size_t frac_end = SkipDigits(s, i + 1);
    if (!has_int && frac_end == i + 1) return false;
    i = frac_end;
  } else if (!has_int) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t exp_start = SkipSign(s, i + 1);
    size_t exp_end = SkipDigits(s, exp_start);
    if (exp_end == exp_start) return false;
    i = exp_end;
  }
  return i == s.size();
}

nlohmann::json Scalar(const YAML::Node& node) {
  const std::string& value = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return value;  // quoted
  if (value == "true" || value == "True" || value == "TRUE") return true;
  if (value == "false" || value == "False" || value == "FALSE") return false;
  if (value == "null" || value == "~" || value == "Null" || value == "NULL") return nullptr;
  if (IsInteger(value)) {
    // Beyond 64 bits, keep the digits: protobuf's JSON accepts them as strings.
    errno = 0;
    char* end = nullptr;
    if (value[0] == '-') {
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (errno == 0) return v;
    } else {
      unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (errno == 0) return v;
    }
    return value;
  }
  if (IsFloat(value)) return std::strtod(value.c_str(), nullptr);
  return value;
}

absl::StatusOr<nlohmann::json> Convert(const YAML::Node& node, int max_depth, int64_t* budget) {
  // A node counts one, a scalar also its length: aliases repeating a long
  // scalar expand bytes, not nodes.
  *budget -= 1 + (node.IsScalar() ? static_cast<int64_t>(node.Scalar().size()) : 0);
  if (*budget < 0) {
    return absl::InvalidArgumentError(
        "document expands to too many nodes and bytes (aliases repeated too often?)");
  }
  if (max_depth <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", node.Mark().line + 1, ": nested too deeply (or an alias refers to itself)"));
  }
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return Scalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const YAML::Node& item : node) {
        absl::StatusOr<nlohmann::json> value = Convert(item, max_depth - 1, budget);
        if (!value.ok()) return value.status();
        array.push_back(*std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          return absl::InvalidArgumentError(
              absl::StrCat("line ", entry.first.Mark().line + 1, ": map keys must be scalars"));
        }
        absl::StatusOr<nlohmann::json> value = Convert(entry.second, max_depth - 1, budget);
        if (!value.ok()) return value.status();
        object[entry.first.Scalar()] = *std::move(value);
      }
      return object;
    }
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<nlohmann::json> YamlToJson(const YAML::Node& node, int max_depth,
                                          int64_t max_expansion) {
  int64_t budget = max_expansion;
  return Convert(node, max_depth, &budget);
}

absl::StatusOr<nlohmann::json> YamlToJson(const YAML::Node& node, int max_depth,
                                          int64_t* expansion_budget) {
  return Convert(node, max_depth, expansion_budget);
}

}  // namespace holdfast
