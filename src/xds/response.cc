#include "src/xds/response.h"

namespace holdfast {

int AdsTypeRank(absl::string_view type_url) {
  if (type_url == type_url::kCluster) return 0;
  if (type_url == type_url::kClusterLoadAssignment) return 1;
  if (type_url == type_url::kListener) return 2;
  if (type_url == type_url::kRouteConfiguration) return 3;
  return 4;
}

bool IsFullStateType(absl::string_view type_url) {
  return type_url == type_url::kListener || type_url == type_url::kCluster;
}

bool IsIncrementalSotwType(absl::string_view type_url) {
  return type_url == type_url::kClusterLoadAssignment ||
         type_url == type_url::kRouteConfiguration;
}

}  // namespace holdfast
