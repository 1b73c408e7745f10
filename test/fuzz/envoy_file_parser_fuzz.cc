// Fuzz target: the parser of outside input for --xds-dir files, followed by
// Envoy validation and resource encoding, as the directory source runs them.
// A file both readers take must parse exactly the same through either
// (lines and messages included): the JSON fast path may not change a result.
// A resource the fast message reader takes must equal what protobuf's JSON
// reader makes of it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "nlohmann/json.hpp"
#include "src/snapshot/resource.h"
#include "src/source/envoy_file_parser.h"
#include "src/source/json_message_reader.h"
#include "src/source/json_resource_document.h"
#include "src/translate/envoy_validation.h"

namespace {

std::string Describe(const holdfast::ParsedFile& file) {
  std::string out = file.unreadable ? "unreadable\n" : "";
  for (const auto& r : file.resources) {
    out += "resource " + r.type_url + " \"" + r.name + "\" line " + std::to_string(r.line) +
           ": " + r.message->ShortDebugString() + "\n";
  }
  for (const auto& p : file.problems) {
    out += "problem line " + std::to_string(p.line) + " " + p.type_url + " \"" + p.name +
           "\": " + p.message + "\n";
  }
  return out;
}

// Checks the message reader on one resource of the tree the file parser
// itself reads, against protobuf's reader of the same resource.
void CheckMessageReader(nlohmann::json resource) {
  if (!resource.is_object() || !resource.contains("@type")) return;
  const nlohmann::json& type_url = resource["@type"];
  if (!type_url.is_string()) return;
  const std::string type_name(holdfast::TypeNameOf(type_url.get_ref<const std::string&>()));
  const auto* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
  if (descriptor == nullptr) return;
  resource.erase("@type");
  const auto* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor);
  std::unique_ptr<google::protobuf::Message> fast(prototype->New());
  if (!holdfast::ReadJsonMessageExactly(resource, fast.get())) return;
  std::unique_ptr<google::protobuf::Message> reference(prototype->New());
  const std::string text =
      resource.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!google::protobuf::util::JsonStringToMessage(text, reference.get()).ok() ||
      !google::protobuf::util::MessageDifferencer::Equals(*fast, *reference)) {
    std::fprintf(stderr, "fast reader took %s as %s; protobuf: %s\n", text.c_str(),
                 fast->ShortDebugString().c_str(), reference->ShortDebugString().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string contents(reinterpret_cast<const char*>(data), size);
  holdfast::ParsedFile parsed = holdfast::ParseEnvoyResources(contents);
  std::optional<holdfast::JsonResourceDocument> document =
      holdfast::ReadJsonResourceDocument(contents, 60);
  if (document.has_value()) {
    holdfast::ParsedFile as_yaml = holdfast::ParseEnvoyResourcesAsYaml(contents);
    std::string json = Describe(parsed);
    std::string yaml = Describe(as_yaml);
    // yaml-cpp refuses some valid JSON (keys over 1,024 characters): there
    // the JSON reader is right, and nothing is left to compare.
    if (!as_yaml.unreadable && json != yaml) {
      std::fprintf(stderr, "JSON reader:\n%s\nYAML reader:\n%s\n", json.c_str(), yaml.c_str());
      std::abort();
    }
  }
  if (document.has_value()) {
    nlohmann::json& root = document->root;
    auto resources = root.find("resources");
    if (resources != root.end() && resources->is_array() && !root.contains("@type")) {
      for (nlohmann::json& resource : *resources) CheckMessageReader(std::move(resource));
    } else {
      CheckMessageReader(std::move(root));
    }
  }
  for (const holdfast::ParsedResource& resource : parsed.resources) {
    if (holdfast::ValidateEnvoyResource(*resource.message).ok()) {
      holdfast::Resource::FromMessage(resource.name, *resource.message);
    }
  }
  return 0;
}
