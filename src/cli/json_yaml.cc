#include "src/cli/json_yaml.h"

#include <cctype>

#include "absl/strings/str_format.h"
#include "yaml-cpp/yaml.h"

namespace holdfast {
namespace {

void Emit(const nlohmann::json& value, YAML::Emitter& out) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key << key << YAML::Value;
        Emit(item, out);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const nlohmann::json& item : value) Emit(item, out);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string:
      out << YAML::DoubleQuoted << value.get<std::string>();
      break;
    case nlohmann::json::value_t::null:
      out << YAML::Null;
      break;
    default:  // numbers and booleans print the same in both
      out << value.dump();
      break;
  }
}

}  // namespace

std::string JsonToYaml(const nlohmann::json& value) {
  YAML::Emitter out;
  Emit(value, out);
  return out.c_str();
}

std::string UrlQueryEscape(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

}  // namespace holdfast
