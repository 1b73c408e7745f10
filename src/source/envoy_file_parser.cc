#include "src/source/envoy_file_parser.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "src/model/yaml_load.h"
#include "src/snapshot/resource.h"
#include "src/source/json_message_reader.h"
#include "src/source/json_resource_document.h"
#include "src/source/yaml_json.h"

namespace holdfast {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Deeper than this, a resource is refused (YamlToJson says so).
constexpr int kMaxDepth = 64;

void ParseOne(nlohmann::json json, int line, ParsedFile* out) {
  if (!json.is_object()) {
    out->problems.push_back({line, "", "", "a resource must be a map with an \"@type\""});
    return;
  }
  auto type_it = json.find("@type");
  if (type_it == json.end() || !type_it->is_string()) {
    out->problems.push_back({line, "", "", "resource has no \"@type\""});
    return;
  }
  std::string type_url = *type_it;
  std::string name_hint = json.contains("name") && json["name"].is_string()
                              ? json["name"].get<std::string>()
                              : (json.contains("cluster_name") && json["cluster_name"].is_string()
                                     ? json["cluster_name"].get<std::string>()
                                     : "");
  const Descriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
          std::string(TypeNameOf(type_url)));
  if (descriptor == nullptr) {
    out->problems.push_back(
        {line, type_url, name_hint, absl::StrCat("@type: unknown type ", type_url)});
    return;
  }
  json.erase("@type");
  std::unique_ptr<Message> message(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
  if (!ReadJsonMessageExactly(json, message.get())) {
    message->Clear();
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    // Invalid UTF-8 in a string is replaced, not thrown: the JSON parser then
    // reports the field.
    std::string text = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto status = google::protobuf::util::JsonStringToMessage(text, message.get(), options);
    if (!status.ok()) {
      out->problems.push_back({line, type_url, name_hint, std::string(status.message())});
      return;
    }
  }
  std::string name = ResourceNameOf(*message);
  if (name.empty()) {
    out->problems.push_back({line, type_url, "", "resource has no name"});
    return;
  }
  out->resources.push_back({type_url, std::move(name), line, std::move(message)});
}

void ParseOne(const YAML::Node& node, int64_t* expansion_budget, ParsedFile* out) {
  const int line = node.Mark().line + 1;
  absl::StatusOr<nlohmann::json> converted = YamlToJson(node, kMaxDepth, expansion_budget);
  if (!converted.ok()) {
    out->problems.push_back({line, "", "", std::string(converted.status().message())});
    return;
  }
  ParseOne(*std::move(converted), line, out);
}

// The same steps as the YAML path below, over a document read as JSON.
ParsedFile ParseJsonDocument(JsonResourceDocument document) {
  ParsedFile out;
  nlohmann::json& root = document.root;
  auto resources = root.find("resources");
  if (resources == root.end() || root.contains("@type")) {
    ParseOne(std::move(root), document.root_line, &out);
    return out;
  }
  if (!resources->is_array()) {
    out.problems.push_back(
        {document.resources_line, "", "", "resources: expected a list of resources"});
    return out;
  }
  for (size_t i = 0; i < resources->size(); ++i) {
    ParseOne(std::move((*resources)[i]), document.resource_lines[i], &out);
  }
  return out;
}

}  // namespace

std::string ResourceNameOf(const Message& message) {
  const Descriptor* descriptor = message.GetDescriptor();
  // ClusterLoadAssignment is the one xDS type named by another field.
  const FieldDescriptor* field = descriptor->FindFieldByName("cluster_name");
  if (field == nullptr || descriptor->name() != "ClusterLoadAssignment") {
    field = descriptor->FindFieldByName("name");
  }
  if (field == nullptr || field->type() != FieldDescriptor::TYPE_STRING || field->is_repeated()) {
    return "";
  }
  return message.GetReflection()->GetString(message, field);
}

ParsedFile ParseEnvoyResources(const std::string& contents) {
  // A margin below kMaxDepth: a file near the limit gets the YAML path's
  // messages, which count depth from each resource.
  if (auto json = ReadJsonResourceDocument(contents, kMaxDepth - 4)) {
    return ParseJsonDocument(*std::move(json));
  }
  return ParseEnvoyResourcesAsYaml(contents);
}

ParsedFile ParseEnvoyResourcesAsYaml(const std::string& contents) {
  ParsedFile out;
  std::vector<YAML::Node> documents;
  try {
    documents = LoadAllDocuments(contents);
  } catch (const YAML::Exception& e) {
    out.unreadable = true;
    out.problems.push_back({e.mark.line + 1, "", "", e.msg});
    return out;
  }
  // Written YAML has at most a node per two bytes, and its scalars' lengths
  // add up to less than its size: at most 1.5 units of the budget per byte.
  // Only aliases copied over and over exceed that. So any file without them
  // passes, and aliases add 16 units per byte of the file (16 Ki at least),
  // never more than 1 Mi units whatever the size: memory stays in proportion
  // to the file, and so does the time a small file takes to refuse. (With no
  // cap, a 4 MB file of comments and ten lines of aliases took 2 GB and 11 s
  // to refuse; with a fixed 1 Mi, a 511-byte alias bomb took 120 ms, 2 s
  // under ASan.)
  constexpr int64_t kMinAliasExpansion = 16 << 10;
  constexpr int64_t kMaxAliasExpansion = 1 << 20;
  const int64_t size = static_cast<int64_t>(contents.size());
  int64_t expansion_budget =
      2 * size + std::min(kMaxAliasExpansion, kMinAliasExpansion + 16 * size);
  try {
    for (const YAML::Node& document : documents) {
      if (!document || document.IsNull()) continue;
      if (document.IsMap() && document["resources"] && !document["@type"]) {
        const YAML::Node resources = document["resources"];
        if (!resources.IsSequence()) {
          out.problems.push_back(
              {resources.Mark().line + 1, "", "", "resources: expected a list of resources"});
          continue;
        }
        for (const YAML::Node& resource : resources) ParseOne(resource, &expansion_budget, &out);
      } else {
        ParseOne(document, &expansion_budget, &out);
      }
    }
  } catch (const std::exception& e) {
    // yaml-cpp throws for some malformed node accesses; the file is unusable.
    out.unreadable = true;
    out.problems.push_back({0, "", "", e.what()});
  }
  return out;
}

}  // namespace holdfast
