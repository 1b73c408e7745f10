#include "src/snapshot/references.h"

#include "absl/strings/str_cat.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"

namespace holdfast {
namespace {

using envoy::config::cluster::v3::Cluster;
using envoy::config::listener::v3::Filter;
using envoy::config::listener::v3::Listener;
using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

void AddRdsReference(const google::protobuf::Any& config, const std::string& path,
                     std::vector<ResourceRef>* refs) {
  HttpConnectionManager hcm;
  if (!config.Is<HttpConnectionManager>() || !config.UnpackTo(&hcm)) return;
  if (hcm.has_rds()) {
    refs->push_back({std::string(type_url::kRouteConfiguration), hcm.rds().route_config_name(),
                     absl::StrCat(path, ".rds.route_config_name")});
  }
}

void AddFilterChainReferences(const envoy::config::listener::v3::FilterChain& chain,
                              const std::string& path, std::vector<ResourceRef>* refs) {
  for (int i = 0; i < chain.filters_size(); ++i) {
    const Filter& filter = chain.filters(i);
    if (filter.has_typed_config()) {
      AddRdsReference(filter.typed_config(), absl::StrCat(path, ".filters[", i, "].typed_config"),
                      refs);
    }
  }
}

}  // namespace

std::vector<ResourceRef> ReferencesOf(const Resource& resource) {
  std::vector<ResourceRef> refs;
  // Only these two kinds reference others; don't parse anything else.
  if (resource.type_url() != type_url::kListener && resource.type_url() != type_url::kCluster) {
    return refs;
  }
  const google::protobuf::Message* message = resource.message();
  if (message == nullptr) return refs;

  if (const auto* listener = dynamic_cast<const Listener*>(message)) {
    for (int i = 0; i < listener->filter_chains_size(); ++i) {
      AddFilterChainReferences(listener->filter_chains(i), absl::StrCat("filter_chains[", i, "]"),
                               &refs);
    }
    if (listener->has_default_filter_chain()) {
      AddFilterChainReferences(listener->default_filter_chain(), "default_filter_chain", &refs);
    }
    if (listener->has_api_listener() && listener->api_listener().has_api_listener()) {
      AddRdsReference(listener->api_listener().api_listener(), "api_listener.api_listener", &refs);
    }
  } else if (const auto* cluster = dynamic_cast<const Cluster*>(message)) {
    if (cluster->has_type() && cluster->type() == Cluster::EDS) {
      const std::string& service = cluster->eds_cluster_config().service_name();
      refs.push_back({std::string(type_url::kClusterLoadAssignment),
                      service.empty() ? cluster->name() : service,
                      service.empty() ? "name" : "eds_cluster_config.service_name"});
    }
  }
  return refs;
}

const std::vector<ResourceRef>& Resource::references() const {
  absl::call_once(references_once_, [this] { references_ = ReferencesOf(*this); });
  return references_;
}

}  // namespace holdfast
