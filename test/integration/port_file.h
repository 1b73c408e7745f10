// Writes a small file atomically so that a test polling for it never reads a
// partial write: write a temporary sibling, then rename over the target.
#ifndef HOLDFAST_TEST_INTEGRATION_PORT_FILE_H_
#define HOLDFAST_TEST_INTEGRATION_PORT_FILE_H_

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace holdfast::test {

inline absl::Status WriteFileAtomically(const std::string& path,
                                        const std::string& contents) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << contents;
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace holdfast::test

#endif  // HOLDFAST_TEST_INTEGRATION_PORT_FILE_H_
