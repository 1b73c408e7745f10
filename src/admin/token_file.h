#pragma once

#include <sys/types.h>

#include <array>
#include <ctime>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace holdfast {

// A bearer token kept in a file (surrounding whitespace ignored), re-read
// when the file changes (its inode, size or modification time), so a token
// is rotated by writing the file, with no restart. Thread-safe.
class TokenFile {
 public:
  // Fails when the file cannot be read or holds no token.
  static absl::StatusOr<std::unique_ptr<TokenFile>> Open(const std::string& path);

  // Whether `presented` is the file's current token. Compares digests in
  // constant time. While the file is unreadable or empty, nothing matches
  // (fail closed); the reason is logged once per change.
  bool Matches(absl::string_view presented);

  // Whether an "Authorization: Bearer TOKEN" header value carries the token.
  bool MatchesAuthorization(absl::string_view header);

 private:
  struct Stamp {
    ino_t inode = 0;
    off_t size = -1;
    timespec modified{};
    bool operator==(const Stamp& other) const;
  };
  explicit TokenFile(std::string path) : path_(std::move(path)) {}
  // Re-reads the file if its stamp changed; the load's error, if any.
  absl::Status Refresh() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  Stamp stamp_ ABSL_GUARDED_BY(mu_);
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  std::array<unsigned char, 32> digest_ ABSL_GUARDED_BY(mu_){};  // SHA-256 of the token
};

}  // namespace holdfast
