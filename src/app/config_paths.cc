#include "src/app/config_paths.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "src/source/directory_scanner.h"

namespace holdfast {

absl::StatusOr<ConfigPaths> ReadConfigPaths(const std::vector<std::string>& paths) {
  ConfigPaths out;
  for (const std::string& path : paths) {
    std::vector<std::string> found;
    if (std::filesystem::is_directory(path)) {
      absl::StatusOr<DirectoryListing> scan = ScanDirectory(path, {".yaml", ".yml"});
      if (!scan.ok()) return scan.status();
      for (const auto& [dir, why] : scan->unreadable) {
        return absl::PermissionDeniedError(absl::StrCat(dir, ": ", why));
      }
      for (const auto& [entry, why] : scan->skipped)
        out.skipped.push_back(absl::StrCat(entry, ": ", why));
      for (const auto& [file, fingerprint] : scan->files) found.push_back(file);
    } else {
      found.push_back(path);
    }
    for (const std::string& file : found) {
      absl::StatusOr<std::string> contents = ReadWholeFile(file);
      if (!contents.ok()) return contents.status();
      out.files[file] = DecodeObjects(*contents, file);
    }
  }
  return out;
}

absl::StatusOr<TranslatedConfig> TranslateConfig(const std::map<std::string, DecodedFile>& files) {
  StatusMap file_statuses;
  TranslationInput input = AssembleInput(files, {}, &file_statuses);
  Translator translator;
  TranslationOutput output = translator.Translate(input);
  TranslatedConfig out;
  out.statuses = MergeStatuses(std::move(output.statuses), file_statuses);
  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::Build(output.resources, absl::Now(), output.rollouts);
  if (!snapshot.ok()) return snapshot.status();
  out.resources = std::move(output.resources);
  out.snapshot = *std::move(snapshot);
  return out;
}

}  // namespace holdfast
