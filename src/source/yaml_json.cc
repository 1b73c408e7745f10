#include "src/source/yaml_json.h"

#include <cstdlib>
#include <regex>

namespace holdfast {
namespace {

bool IsInteger(const std::string& s) {
  static const std::regex* re = new std::regex(R"(^[-+]?(0|[1-9][0-9]*)$)");
  return std::regex_match(s, *re);
}

bool IsFloat(const std::string& s) {
  static const std::regex* re =
      new std::regex(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
  return std::regex_match(s, *re);
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

}  // namespace

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return Scalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const YAML::Node& item : node) array.push_back(YamlToJson(item));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) object[entry.first.as<std::string>()] = YamlToJson(entry.second);
      return object;
    }
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

}  // namespace holdfast
