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
// withdraw live resources.
//
// While files keep changing faster than the poll interval, no two listings
// are equal; waiting for one would publish nothing until the changes stop
// (a benchmark rewriting endpoints every 100 ms saw a minute with no push).
// So after `max_unconfirmed_polls` polls without a stable listing, a listing
// whose file *names* the previous one confirms is handed over anyway: names
// are what a listing torn by renames gets wrong; contents are read per file.
//
// Logs when the directory becomes unreadable and readable again. Not
// thread-safe: one poller calls it.
class ConfirmedScanner {
 public:
  static constexpr int kDefaultMaxUnconfirmedPolls = 4;

  ConfirmedScanner(std::string directory, std::vector<std::string> extensions,
                   int max_unconfirmed_polls = kDefaultMaxUnconfirmedPolls)
      : directory_(std::move(directory)),
        extensions_(std::move(extensions)),
        max_unconfirmed_polls_(max_unconfirmed_polls) {}

  // A listing equal to the previous call's; or, after max_unconfirmed_polls
  // calls without one, a listing with the same names as the previous call's;
  // else nullopt.
  std::optional<std::map<std::string, FileFingerprint>> Poll();

  // True when the last Poll() saw a new listing after a settled one (or a
  // first listing): its confirmation should be sought soon, so that a
  // single change (one write, one rename) is served within milliseconds of
  // being seen rather than a poll interval later. A listing still changing
  // on the next poll goes back to the normal interval, so that copies and
  // churn are debounced as before.
  bool confirm_soon() const { return confirm_soon_; }

 private:
  const std::string directory_;
  const std::vector<std::string> extensions_;
  const int max_unconfirmed_polls_;
  bool healthy_ = true;
  int unconfirmed_polls_ = 0;
  bool confirm_soon_ = false;
  std::optional<std::map<std::string, FileFingerprint>> previous_;
};

// Reads a whole file.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace holdfast
