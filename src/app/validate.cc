#include "src/app/validate.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "src/admin/admin_server.h"
#include "src/source/config_files.h"
#include "src/source/directory_scanner.h"
#include "src/translate/envoy_validation.h"

namespace holdfast {

int RunValidate(const ValidateOptions& options) {
  std::map<std::string, DecodedFile> files;
  for (const std::string& path : options.paths) {
    std::vector<std::string> found;
    if (std::filesystem::is_directory(path)) {
      absl::StatusOr<DirectoryListing> scan = ScanDirectory(path, {".yaml", ".yml"});
      if (!scan.ok()) {
        std::cerr << scan.status().message() << "\n";
        return 2;
      }
      for (const auto& [dir, why] : scan->unreadable) {
        std::cerr << dir << ": " << why << "\n";
        return 2;
      }
      for (const auto& [entry, why] : scan->skipped) std::cerr << entry << ": " << why << "\n";
      for (const auto& [file, fingerprint] : scan->files) found.push_back(file);
    } else {
      found.push_back(path);
    }
    for (const std::string& file : found) {
      absl::StatusOr<std::string> contents = ReadWholeFile(file);
      if (!contents.ok()) {
        std::cerr << contents.status().message() << "\n";
        return 2;
      }
      files[file] = DecodeObjects(*contents, file);
    }
  }

  StatusMap file_statuses;
  TranslationInput input = AssembleInput(files, {}, &file_statuses);
  Translator translator;
  TranslationOutput output = translator.Translate(input);
  StatusMap statuses = MergeStatuses(std::move(output.statuses), file_statuses);

  // Envoy's own rules, on everything that would be served.
  int invalid_resources = 0;
  for (const ResourcePtr& resource : output.resources) {
    if (resource->message() == nullptr) continue;
    absl::Status status = ValidateEnvoyResource(*resource->message());
    if (!status.ok()) {
      ++invalid_resources;
      std::cerr << "internal error: " << TypeNameOf(resource->type_url()) << " \""
                << resource->name() << "\" fails Envoy's validation: " << status.message() << "\n";
    }
  }
  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::Build(output.resources, absl::Now());
  if (!snapshot.ok()) {
    std::cerr << "internal error: " << snapshot.status().message() << "\n";
    return 1;
  }

  int rejected = 0;
  for (const auto& [key, status] : statuses) rejected += status.state == StatusState::kRejected;

  if (options.output == "json") {
    // File names need not be UTF-8; JSON must be.
    std::cout << StatusesToJson(statuses).dump(2, ' ', false,
                                               nlohmann::json::error_handler_t::replace)
              << "\n";
  } else if (options.output == "resources") {
    std::cout << ResourcesToJson(**snapshot).dump(2) << "\n";
  } else {
    for (const auto& [key, status] : statuses) {
      std::printf("%-9s %s%s\n", StatusStateName(status.state), key.ToString().c_str(),
                  status.serving_last_good ? " (serving last good)" : "");
      for (const FieldError& reason : status.reasons) {
        std::printf("          %s\n", reason.ToString().c_str());
      }
    }
    std::printf("%zu objects, %d rejected; %zu Envoy resources\n", statuses.size(), rejected,
                output.resources.size());
  }
  return rejected > 0 || invalid_resources > 0 ? 1 : 0;
}

}  // namespace holdfast
