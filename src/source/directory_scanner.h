#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/common/read_file.h"
#include "src/source/directory_changes.h"

namespace holdfast {

// What identifies a file's content without reading it.
struct FileFingerprint {
  int64_t mtime_ns = 0;
  int64_t size = 0;
  uint64_t inode = 0;
  bool operator==(const FileFingerprint&) const = default;
};

// A directory tree's config files, and what could not be looked at.
struct DirectoryListing {
  std::map<std::string, FileFingerprint> files;
  // Directories that could not be listed (their files are unknown, not
  // gone), and entries skipped on purpose (symlinks that leave the tree),
  // each with why. Sources keep serving what an unreadable directory held.
  std::map<std::string, std::string> unreadable;
  std::map<std::string, std::string> skipped;
  // Whether the tree holds symlinks: a link's file changes under another
  // name than the one listed, so such a tree is always listed whole.
  bool has_links = false;
  bool operator==(const DirectoryListing&) const = default;
};

// Lists the config files under `directory` (recursively, skipping names that
// start with '.') whose extension is one of `extensions` (".yaml", ...),
// with their fingerprints. Symlinks are followed only to targets inside the
// tree, and each directory is listed once, however many links lead to it (a
// link loop ends there). Fails only if `directory` itself cannot be listed;
// a subdirectory that cannot be listed is reported in `unreadable`.
absl::StatusOr<DirectoryListing> ScanDirectory(const std::string& directory,
                                               const std::vector<std::string>& extensions);

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
// A poll made because writes were announced (an inotify watch saw writers
// close their files, then the directory stay quiet for 20 ms) hands over a
// listing with the same names as the last one handed over without a second
// look: a listing torn by renames differs in names, and contents are read
// per file. An edit of existing files is so served one confirmation (20 ms
// and a listing) sooner; a file added or removed still waits for it, and so
// does whatever a timed poll finds (a writer may still be at work).
//
// When the watch also names every entry changed since the last poll, that
// poll looks at the named entries alone and patches the last listing (with
// 1,000 files and 100 rewritten, a tenth of the work of listing the tree).
// The patch is handed over only if it has the names last handed over, as an
// announced listing is; if not, or if anything cannot be told by name, or
// the tree holds links, the tree is listed whole as above.
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

  // A listing equal to the previous call's; or, when `changes.any` (the
  // watch saw writes), one with the same names (and the same unreadable
  // directories) as the last listing handed over; or, after
  // max_unconfirmed_polls calls without either, one with the same names as
  // the previous call's; else null. `changes` is what the watch saw since
  // the previous call; none for a timed poll. Listings are shared, not
  // copied: one of 1,000 files was copied three times per poll.
  std::shared_ptr<const DirectoryListing> Poll(const DirectoryChanges& changes = {});

  // True when the last Poll() saw a new listing after a settled one (or a
  // first listing): its confirmation should be sought soon, so that a
  // single change (one write, one rename) is served within milliseconds of
  // being seen rather than a poll interval later. A listing still changing
  // on the next poll goes back to the normal interval, so that copies and
  // churn are debounced as before.
  bool confirm_soon() const { return confirm_soon_; }

 private:
  // The previous listing with the entries in `paths` looked at again, if it
  // may be patched (see the class comment); nullopt means list the tree.
  std::optional<DirectoryListing> Patched(const absl::flat_hash_set<std::string>& paths) const;
  // Hands over `listing` as the previous one and the one handed over.
  std::shared_ptr<const DirectoryListing> HandOver(DirectoryListing listing);

  const std::string directory_;
  const std::vector<std::string> extensions_;
  const int max_unconfirmed_polls_;
  bool healthy_ = true;
  int unconfirmed_polls_ = 0;
  bool confirm_soon_ = false;
  std::shared_ptr<const DirectoryListing> previous_;
  std::shared_ptr<const DirectoryListing> handed_over_;
};

// The largest config file read. Decoding takes up to ~100 times a file's
// size in memory (YAML nodes), so a larger file is refused, not read.
inline constexpr int64_t kMaxConfigFileBytes = 4 << 20;

// Reads a whole regular file of at most `max_bytes`. Anything else (a FIFO,
// a device, a larger file) is refused without blocking or reading it all.
inline absl::StatusOr<std::string> ReadWholeFile(const std::string& path,
                                                 int64_t max_bytes = kMaxConfigFileBytes) {
  return ReadRegularFile(path, max_bytes);
}

}  // namespace holdfast
