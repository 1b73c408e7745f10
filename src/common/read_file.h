#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace holdfast {

// Reads a whole regular file of at most `max_bytes`. Anything else (a FIFO,
// a device such as /dev/zero, a larger file) is refused without blocking and
// without reading it all.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes);

}  // namespace holdfast
