#include "bench/floor/fleet.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"

namespace xds_floor {
namespace {

using holdfast::Resource;
using holdfast::ResourcePtr;

void SetAds(envoy::config::core::v3::ConfigSource* source) {
  source->mutable_ads();
  source->set_resource_api_version(envoy::config::core::v3::V3);
}

void SetAddress(envoy::config::core::v3::Address* address, int port) {
  auto* socket = address->mutable_socket_address();
  socket->set_address("127.0.0.1");
  socket->set_port_value(port);
}

}  // namespace

std::string ClusterName(int i) { return absl::StrFormat("cluster-%05d", i); }

ResourcePtr ClusterResource(int i) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(ClusterName(i));
  cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
  cluster.mutable_connect_timeout()->set_seconds(1);
  cluster.set_lb_policy(envoy::config::cluster::v3::Cluster::ROUND_ROBIN);
  SetAds(cluster.mutable_eds_cluster_config()->mutable_eds_config());
  return Resource::FromMessage(cluster.name(), cluster);
}

ResourcePtr LoadAssignmentResource(const FleetParams& params, int i, int gen) {
  envoy::config::endpoint::v3::ClusterLoadAssignment assignment;
  assignment.set_cluster_name(ClusterName(i));
  auto* locality_endpoints = assignment.add_endpoints();
  auto* locality = locality_endpoints->mutable_locality();
  locality->set_region("bench");
  locality->set_zone("zone-a");
  locality->set_sub_zone(absl::StrCat("g", gen));
  locality_endpoints->mutable_load_balancing_weight()->set_value(1);
  const int per_cluster = params.endpoints_per_cluster;
  for (int k = 0; k < per_cluster; ++k) {
    const int port = 1024 + ((i * per_cluster + k) * 7 + gen * 13) % 64000;
    SetAddress(locality_endpoints->add_lb_endpoints()->mutable_endpoint()->mutable_address(), port);
  }
  return Resource::FromMessage(assignment.cluster_name(), assignment);
}

ResourcePtr RouteConfigResource(const FleetParams& params) {
  envoy::config::route::v3::RouteConfiguration config;
  config.set_name(kRouteConfigName);
  auto* host = config.add_virtual_hosts();
  host->set_name("bench");
  host->add_domains(std::string(1, '*'));
  for (int k = 0; k < params.routes; ++k) {
    auto* route = host->add_routes();
    route->set_name(absl::StrFormat("route-%05d", k));
    route->mutable_match()->set_prefix(absl::StrFormat("/svc-%05d/", k));
    route->mutable_route()->set_cluster(ClusterName(k % params.clusters));
    route->mutable_route()->mutable_timeout()->set_seconds(5);
  }
  return Resource::FromMessage(config.name(), config);
}

ResourcePtr ListenerResource(int j) {
  namespace hcm_v3 = envoy::extensions::filters::network::http_connection_manager::v3;
  hcm_v3::HttpConnectionManager hcm;
  hcm.set_stat_prefix("ingress_http");
  hcm.mutable_rds()->set_route_config_name(kRouteConfigName);
  SetAds(hcm.mutable_rds()->mutable_config_source());
  auto* router = hcm.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());

  envoy::config::listener::v3::Listener listener;
  listener.set_name(absl::StrCat("listener-", j));
  SetAddress(listener.mutable_address(), 10000 + j);
  auto* filter = listener.add_filter_chains()->add_filters();
  filter->set_name("envoy.filters.network.http_connection_manager");
  filter->mutable_typed_config()->PackFrom(hcm);
  return Resource::FromMessage(listener.name(), listener);
}

}  // namespace xds_floor
