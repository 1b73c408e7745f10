#pragma once

#include <string>
#include <vector>

#include "src/snapshot/resource.h"

namespace holdfast {

// The route configurations a Listener loads over RDS and the load assignment
// an EDS Cluster loads over EDS. Other kinds reference nothing we check.
std::vector<ResourceRef> ReferencesOf(const Resource& resource);

}  // namespace holdfast
