#pragma once
// Small builders for Envoy resources used across unit tests.

#include <string>
#include <vector>

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "src/snapshot/snapshot.h"

namespace holdfast::testing {

inline ResourcePtr EdsCluster(const std::string& name, int connect_timeout_s = 1) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(name);
  cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
  cluster.mutable_connect_timeout()->set_seconds(connect_timeout_s);
  return Resource::FromMessage(name, cluster);
}

inline ResourcePtr Endpoints(const std::string& cluster, int port) {
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.set_cluster_name(cluster);
  auto* locality = cla.add_endpoints();
  locality->mutable_load_balancing_weight()->set_value(1);
  auto* address = locality->add_lb_endpoints()->mutable_endpoint()->mutable_address();
  address->mutable_socket_address()->set_address("127.0.0.1");
  address->mutable_socket_address()->set_port_value(port);
  return Resource::FromMessage(cluster, cla);
}

inline ResourcePtr RouteConfig(const std::string& name, const std::string& cluster) {
  envoy::config::route::v3::RouteConfiguration rc;
  rc.set_name(name);
  auto* vhost = rc.add_virtual_hosts();
  vhost->set_name("all");
  vhost->add_domains("*");
  auto* route = vhost->add_routes();
  route->mutable_match()->set_prefix("/");
  route->mutable_route()->set_cluster(cluster);
  return Resource::FromMessage(name, rc);
}

inline ResourcePtr ApiListener(const std::string& name, const std::string& route_config) {
  using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
  HttpConnectionManager hcm;
  hcm.set_stat_prefix(name);
  hcm.mutable_rds()->set_route_config_name(route_config);
  hcm.mutable_rds()->mutable_config_source()->mutable_ads();
  auto* router = hcm.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  envoy::config::listener::v3::Listener listener;
  listener.set_name(name);
  listener.mutable_api_listener()->mutable_api_listener()->PackFrom(hcm);
  return Resource::FromMessage(name, listener);
}

// A consistent snapshot: listener -> route config -> EDS cluster -> endpoints.
inline SnapshotPtr Chain(const std::string& suffix, int port) {
  auto snapshot = Snapshot::Build({ApiListener("l" + suffix, "r" + suffix),
                                   RouteConfig("r" + suffix, "c" + suffix),
                                   EdsCluster("c" + suffix), Endpoints("c" + suffix, port)},
                                  absl::FromUnixSeconds(1));
  return *snapshot;
}

inline SnapshotPtr Build(std::vector<ResourcePtr> resources) {
  return *Snapshot::Build(std::move(resources), absl::FromUnixSeconds(1));
}

}  // namespace holdfast::testing
