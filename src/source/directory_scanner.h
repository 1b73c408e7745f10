#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace holdfast {

// What identifies a file's content without reading it.
struct FileFingerprint {
  int64_t mtime_ns = 0;
  int64_t size = 0;
  uint64_t inode = 0;
  bool operator==(const FileFingerprint&) const = default;
};

// Lists the config files under `directory` (recursively, following
// symlinks, skipping names that start with '.') whose extension is one of
// `extensions` (".yaml", ...), with their fingerprints. Fails only if the
// directory itself cannot be listed.
absl::StatusOr<std::map<std::string, FileFingerprint>> ScanDirectory(
    const std::string& directory, const std::vector<std::string>& extensions);

// Reads a whole file.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace holdfast
