#include "src/model/doc_node.h"

namespace holdfast {
namespace {

using Json = nlohmann::json;

bool JsonScalar(const Json& json) {
  return json.is_string() || json.is_number() || json.is_boolean();
}

}  // namespace

bool DocNode::IsNull() const {
  if (const auto* json = std::get_if<const Json*>(&node_)) return (*json)->is_null();
  const YAML::Node& yaml = std::get<YAML::Node>(node_);
  return !yaml || yaml.IsNull();
}

bool DocNode::IsMap() const {
  if (const auto* json = std::get_if<const Json*>(&node_)) return (*json)->is_object();
  return std::get<YAML::Node>(node_).IsMap();
}

bool DocNode::IsSequence() const {
  if (const auto* json = std::get_if<const Json*>(&node_)) return (*json)->is_array();
  return std::get<YAML::Node>(node_).IsSequence();
}

bool DocNode::IsScalar() const {
  if (const auto* json = std::get_if<const Json*>(&node_)) return JsonScalar(**json);
  return std::get<YAML::Node>(node_).IsScalar();
}

std::string DocNode::Scalar() const {
  if (const auto* json = std::get_if<const Json*>(&node_)) {
    if ((*json)->is_string()) return (*json)->get_ref<const std::string&>();
    return JsonScalar(**json) ? (*json)->dump() : "";
  }
  const YAML::Node& yaml = std::get<YAML::Node>(node_);
  return yaml.IsScalar() ? yaml.Scalar() : "";
}

int DocNode::Line() const {
  if (std::holds_alternative<const Json*>(node_)) return 0;
  return std::get<YAML::Node>(node_).Mark().line + 1;  // a built node's mark is -1
}

size_t DocNode::size() const {
  if (!IsSequence()) return 0;
  if (const auto* json = std::get_if<const Json*>(&node_)) return (*json)->size();
  return std::get<YAML::Node>(node_).size();
}

DocNode DocNode::operator[](size_t index) const {
  if (const auto* json = std::get_if<const Json*>(&node_)) return DocNode((**json)[index]);
  const YAML::Node& yaml = std::get<YAML::Node>(node_);
  return DocNode(yaml[index]);
}

std::optional<DocNode> DocNode::Find(const std::string& key) const {
  if (!IsMap()) return std::nullopt;
  if (const auto* json = std::get_if<const Json*>(&node_)) {
    auto found = (*json)->find(key);
    if (found == (*json)->end()) return std::nullopt;
    return DocNode(*found);
  }
  const YAML::Node& yaml = std::get<YAML::Node>(node_);
  YAML::Node value = yaml[key];
  if (!value) return std::nullopt;
  return DocNode(std::move(value));
}

std::vector<DocEntry> DocNode::Entries() const {
  std::vector<DocEntry> entries;
  if (!IsMap()) return entries;
  if (const auto* json = std::get_if<const Json*>(&node_)) {
    for (const auto& [key, value] : (*json)->items()) {
      entries.push_back({key, 0, DocNode(value)});
    }
    return entries;
  }
  for (const auto& entry : std::get<YAML::Node>(node_)) {
    entries.push_back(
        {entry.first.IsScalar() ? std::optional<std::string>(entry.first.Scalar()) : std::nullopt,
         entry.first.Mark().line + 1, DocNode(entry.second)});
  }
  return entries;
}

}  // namespace holdfast
