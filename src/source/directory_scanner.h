#pragma once

#include <cstdint>
#include <map>
#include <optional>
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

// Lists a directory again and again, and hands over a listing only once the
// next one confirms it. That debounces editors and multi-file copies, and
// guards against listings taken while files are renamed into the directory,
// which can miss entries (seen on tmpfs under churn) and would otherwise
// withdraw live resources. Logs when the directory becomes unreadable and
// readable again. Not thread-safe: one poller calls it.
class ConfirmedScanner {
 public:
  ConfirmedScanner(std::string directory, std::vector<std::string> extensions)
      : directory_(std::move(directory)), extensions_(std::move(extensions)) {}

  // A listing equal to the previous call's, or nullopt.
  std::optional<std::map<std::string, FileFingerprint>> Poll();

 private:
  const std::string directory_;
  const std::vector<std::string> extensions_;
  bool healthy_ = true;
  std::optional<std::map<std::string, FileFingerprint>> previous_;
};

// Reads a whole file.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace holdfast
