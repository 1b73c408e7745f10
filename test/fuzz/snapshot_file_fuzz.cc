// Fuzz target: the last-known-good snapshot file, read back at start from a
// disk that may hold anything (a torn write, another program's file, damage).
#include <cstddef>
#include <cstdint>

#include "src/snapshot/snapshot_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<holdfast::SnapshotPtr> snapshot = holdfast::DecodeSnapshotFile(bytes, "fuzz");
  if (snapshot.ok()) (void)(*snapshot)->version();
  return 0;
}
