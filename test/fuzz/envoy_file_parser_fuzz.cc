// Fuzz target: the parser of outside input for --xds-dir files, followed by
// Envoy validation and resource encoding, as the directory source runs them.
// A file both readers take must parse exactly the same through either
// (lines and messages included): the JSON fast path may not change a result.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/snapshot/resource.h"
#include "src/source/envoy_file_parser.h"
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string contents(reinterpret_cast<const char*>(data), size);
  holdfast::ParsedFile parsed = holdfast::ParseEnvoyResources(contents);
  if (holdfast::ReadJsonResourceDocument(contents, 60).has_value()) {
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
  for (const holdfast::ParsedResource& resource : parsed.resources) {
    if (holdfast::ValidateEnvoyResource(*resource.message).ok()) {
      holdfast::Resource::FromMessage(resource.name, *resource.message);
    }
  }
  return 0;
}
