#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/snapshot/snapshot.h"

namespace holdfast {

// The last-known-good snapshot on disk, so a replica that restarts while its
// config store is unreachable can serve what it served before.
//
// Format (version 1), all integers little-endian:
//   "HFSNAP01" | u32 format version | u64 payload size | 32-byte SHA-256 of
//   the payload | payload
//   payload: u64 created (unix µs) | u32 count | count × (u32 size + type
//   URL, u32 size + name, u64 size + serialized message)
// Version 2 appends u32 size + rollout policies (JSON); version 3 also puts
// u32 size + version after each name, for resources whose version is not
// a digest of their bytes. Each is written only when needed.
// A file is written beside its destination, flushed to disk (fsync) and
// renamed over it, then the directory is synced: a crash at any point
// leaves either the old file or the new one, never a mix. Reading checks
// the magic, the version, the size and the checksum, and that the
// resources form a consistent snapshot, so a damaged file is reported and
// never served. (Tests can stop a write halfway: see the test hook in
// snapshot_file.cc, inert unless HOLDFAST_TEST_PAUSE_SNAPSHOT_WRITE is set.)
//
// The file is readable by its owner only (resources can hold TLS keys). A
// failed write removes its partial copy. Reading refuses anything but a
// regular file of at most kMaxSnapshotFileBytes.
inline constexpr int64_t kMaxSnapshotFileBytes = int64_t{1} << 30;
absl::Status WriteSnapshotFile(const Snapshot& snapshot, const std::string& path);
absl::StatusOr<SnapshotPtr> ReadSnapshotFile(const std::string& path);
// The checks and decoding of ReadSnapshotFile, on bytes already read;
// `path` is used in messages only.
absl::StatusOr<SnapshotPtr> DecodeSnapshotFile(absl::string_view file, const std::string& path);

}  // namespace holdfast
