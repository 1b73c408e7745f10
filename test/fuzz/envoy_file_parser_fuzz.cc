// Fuzz target: the parser of outside input for --xds-dir files, followed by
// Envoy validation and resource encoding, as the directory source runs them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/snapshot/resource.h"
#include "src/source/envoy_file_parser.h"
#include "src/translate/envoy_validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string contents(reinterpret_cast<const char*>(data), size);
  holdfast::ParsedFile parsed = holdfast::ParseEnvoyResources(contents);
  for (const holdfast::ParsedResource& resource : parsed.resources) {
    if (holdfast::ValidateEnvoyResource(*resource.message).ok()) {
      holdfast::Resource::FromMessage(resource.name, *resource.message);
    }
  }
  return 0;
}
