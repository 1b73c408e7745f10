#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/snapshot/snapshot.h"
#include "src/source/config_files.h"
#include "src/translate/translator.h"

namespace holdfast {

// Gateway objects from files and directories (*.yaml, *.yml), as
// `validate` and `diff` take them.
struct ConfigPaths {
  std::map<std::string, DecodedFile> files;
  std::vector<std::string> skipped;  // "entry: why", worth a line on stderr
};
// Fails on a path or directory entry that cannot be read, naming it.
absl::StatusOr<ConfigPaths> ReadConfigPaths(const std::vector<std::string>& paths);

// What `serve` would make of those files: every object's status and the
// snapshot of resources it would serve.
struct TranslatedConfig {
  StatusMap statuses;
  std::vector<ResourcePtr> resources;
  SnapshotPtr snapshot;
};
// Fails only if the resources do not form a snapshot (an internal error).
absl::StatusOr<TranslatedConfig> TranslateConfig(const std::map<std::string, DecodedFile>& files);

}  // namespace holdfast
