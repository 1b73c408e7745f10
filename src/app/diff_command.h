#pragma once

#include <string>
#include <vector>

#include "src/cli/admin_client.h"

namespace holdfast {

struct DiffOptions {
  AdminEndpoint admin;
  std::vector<std::string> paths;  // files or directories of gateway objects
  std::string group = "default";
};

// `holdfast diff PATH...`: what serving the objects at PATH would change in
// the resources a running replica serves to `group`, before anything is
// written. PATH is read as `validate` reads it and taken as the whole
// configuration (for a directory-backed replica: its directory as it would
// be). Prints each added, changed (with a line diff of the redacted JSON)
// and removed resource, then a count. Exit code 0 when nothing changes, 1
// when something does, 2 when PATH cannot be read or the replica asked.
int RunDiff(const DiffOptions& options);

}  // namespace holdfast
