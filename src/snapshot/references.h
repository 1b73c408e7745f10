#pragma once

#include <string>
#include <vector>

#include "src/snapshot/resource.h"

namespace holdfast {

// A resource another resource depends on to be usable.
struct ResourceRef {
  std::string type_url;
  std::string name;
  // Where the reference is, as a field path inside the referring resource.
  std::string field_path;
};

// The route configurations a Listener loads over RDS and the load assignment
// an EDS Cluster loads over EDS. Other kinds reference nothing we check.
std::vector<ResourceRef> ReferencesOf(const Resource& resource);

}  // namespace holdfast
