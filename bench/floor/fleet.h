#pragma once
// The benchmark's resources, as bench/fleetcfg builds them (keep the two in
// step): EDS clusters, their ClusterLoadAssignments, one RouteConfiguration
// and listeners whose HttpConnectionManager loads it over RDS (ADS).

#include <string>

#include "src/snapshot/resource.h"

namespace xds_floor {

struct FleetParams {
  int clusters = 1000;
  int routes = 1000;
  int endpoints_per_cluster = 3;
  int listeners = 2;
};

inline constexpr char kRouteConfigName[] = "bench-routes";

std::string ClusterName(int i);
holdfast::ResourcePtr ClusterResource(int i);
// Cluster i's endpoints at generation `gen` (sub_zone "g<gen>", moved ports).
holdfast::ResourcePtr LoadAssignmentResource(const FleetParams& params, int i, int gen);
holdfast::ResourcePtr RouteConfigResource(const FleetParams& params);
holdfast::ResourcePtr ListenerResource(int j);

}  // namespace xds_floor
