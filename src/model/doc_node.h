#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace holdfast {

struct DocEntry;

// One node of a document being decoded: parsed by yaml-cpp (files, store
// values), or a JSON value a program built (the Gateway API conversion),
// which would otherwise be copied node by node into yaml-cpp's. Both read
// the way a YAML parser reads JSON text: a scalar is its text (numbers and
// booleans as JSON writes them), and null is the same as absent.
class DocNode {
 public:
  explicit DocNode(YAML::Node node) : node_(std::move(node)) {}
  // `json` must outlive this node and every node read from it.
  explicit DocNode(const nlohmann::json& json) : node_(&json) {}

  bool IsNull() const;  // null, or absent
  bool IsMap() const;
  bool IsSequence() const;
  bool IsScalar() const;
  std::string Scalar() const;  // "" unless IsScalar()
  int Line() const;            // 1-based; 0 where unknown (built documents)

  size_t size() const;  // items of a sequence; 0 otherwise
  DocNode operator[](size_t index) const;
  // The value of `key` in a map, null ones included; nullopt when absent
  // or when this is not a map.
  std::optional<DocNode> Find(const std::string& key) const;

  // A map's entries, in order; empty for other nodes.
  std::vector<DocEntry> Entries() const;

 private:
  std::variant<YAML::Node, const nlohmann::json*> node_;
};

struct DocEntry {
  std::optional<std::string> key;  // nullopt: a key that is not a scalar
  int key_line;
  DocNode value;
};

}  // namespace holdfast
