#include "src/app/validate.h"

#include <cstdio>
#include <iostream>

#include "src/admin/admin_server.h"
#include "src/app/config_paths.h"
#include "src/translate/envoy_validation.h"

namespace holdfast {

int RunValidate(const ValidateOptions& options) {
  absl::StatusOr<ConfigPaths> read = ReadConfigPaths(options.paths);
  if (!read.ok()) {
    std::cerr << read.status().message() << "\n";
    return 2;
  }
  for (const std::string& skipped : read->skipped) std::cerr << skipped << "\n";
  absl::StatusOr<TranslatedConfig> translated = TranslateConfig(read->files);
  if (!translated.ok()) {
    std::cerr << "internal error: " << translated.status().message() << "\n";
    return 1;
  }
  const StatusMap& statuses = translated->statuses;

  // Envoy's own rules, on everything that would be served.
  int invalid_resources = 0;
  for (const ResourcePtr& resource : translated->resources) {
    if (resource->message() == nullptr) continue;
    absl::Status status = ValidateEnvoyResource(*resource->message());
    if (!status.ok()) {
      ++invalid_resources;
      std::cerr << "internal error: " << TypeNameOf(resource->type_url()) << " \""
                << resource->name() << "\" fails Envoy's validation: " << status.message() << "\n";
    }
  }

  int rejected = 0;
  for (const auto& [key, status] : statuses) rejected += status.state == StatusState::kRejected;

  if (options.output == "json") {
    // File names need not be UTF-8; JSON must be.
    std::cout << StatusesToJson(statuses).dump(2, ' ', false,
                                               nlohmann::json::error_handler_t::replace)
              << "\n";
  } else if (options.output == "resources") {
    std::cout << ResourcesToJson(*translated->snapshot).dump(2) << "\n";
  } else {
    for (const auto& [key, status] : statuses) {
      std::printf("%-9s %s%s\n", StatusStateName(status.state), key.ToString().c_str(),
                  status.serving_last_good ? " (serving last good)" : "");
      for (const FieldError& reason : status.reasons) {
        std::printf("          %s\n", reason.ToString().c_str());
      }
    }
    std::printf("%zu objects, %d rejected; %zu Envoy resources\n", statuses.size(), rejected,
                translated->resources.size());
  }
  return rejected > 0 || invalid_resources > 0 ? 1 : 0;
}

}  // namespace holdfast
