#pragma once

#include <string>
#include <vector>

namespace holdfast {

struct ValidateOptions {
  std::vector<std::string> paths;  // files or directories
  // "statuses" (default, a line per object), "json" (statuses as JSON) or
  // "resources" (the Envoy resources that would be served, as JSON).
  std::string output = "statuses";
};

// Decodes and translates the configuration at `paths` exactly as `serve`
// would, checks every resulting Envoy resource against Envoy's validation
// rules, and prints the result. Returns 1 if any object is Rejected or any
// resource fails Envoy's rules, 0 otherwise.
int RunValidate(const ValidateOptions& options);

}  // namespace holdfast
