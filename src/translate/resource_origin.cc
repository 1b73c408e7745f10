#include "src/translate/resource_origin.h"

#include <optional>

#include "absl/strings/str_split.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "src/model/types.h"

namespace holdfast {
namespace {

using envoy::config::listener::v3::Listener;
using envoy::config::route::v3::RouteConfiguration;
using envoy::config::route::v3::VirtualHost;
using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

// "NS/NAME" as an object of `kind`; nullopt for any other shape.
std::optional<ObjectKey> KeyOf(absl::string_view kind, absl::string_view name) {
  std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) return std::nullopt;
  return ObjectKey{std::string(kind), std::string(parts[0]), std::string(parts[1])};
}

// "PREFIX/NS/NAME" as an object of `kind`.
std::optional<ObjectKey> KeyAfter(absl::string_view prefix, absl::string_view kind,
                                  absl::string_view name) {
  if (!absl::ConsumePrefix(&name, prefix)) return std::nullopt;
  return KeyOf(kind, name);
}

template <typename Message>
const Message* As(const Resource* resource) {
  return resource == nullptr ? nullptr : dynamic_cast<const Message*>(resource->message());
}

std::vector<ResourceOrigin> GatewayRoutesOrigins(const ObjectKey& gateway, const Resource* before,
                                                 const Resource& after) {
  std::vector<ResourceOrigin> origins;
  const auto* now = As<RouteConfiguration>(&after);
  if (now == nullptr) return {{gateway, before != nullptr}};
  std::map<std::string, const VirtualHost*> previous;
  if (const auto* then = As<RouteConfiguration>(before)) {
    for (const VirtualHost& host : then->virtual_hosts()) previous[host.name()] = &host;
  }
  for (const VirtualHost& host : now->virtual_hosts()) {
    auto it = previous.find(host.name());
    const bool existed = it != previous.end();
    if (existed && it->second->SerializeAsString() == host.SerializeAsString()) continue;
    if (std::optional<ObjectKey> service = KeyOf(kind::kVirtualService, host.name())) {
      origins.push_back({*std::move(service), existed});
    }
  }
  if (origins.empty()) origins.push_back({gateway, before != nullptr});
  return origins;
}

// An API listener for gRPC clients loads "grpc/NS/NAME" of one service.
std::optional<ObjectKey> ServiceOfApiListener(const Resource& listener) {
  const auto* message = As<Listener>(&listener);
  if (message == nullptr || !message->has_api_listener()) return std::nullopt;
  HttpConnectionManager hcm;
  if (!message->api_listener().api_listener().UnpackTo(&hcm)) return std::nullopt;
  return KeyAfter("grpc/", kind::kVirtualService, hcm.rds().route_config_name());
}

}  // namespace

std::vector<ResourceOrigin> OriginsOfChange(const Resource* before, const Resource& after) {
  const std::string& type = after.type_url();
  const std::string& name = after.name();
  const bool existed = before != nullptr;
  std::optional<ObjectKey> object;
  if (type == type_url::kCluster || type == type_url::kClusterLoadAssignment) {
    object = KeyOf(kind::kUpstream, name);
  } else if (type == type_url::kRouteConfiguration) {
    if (std::optional<ObjectKey> gateway = KeyAfter("gateway/", kind::kGateway, name)) {
      return GatewayRoutesOrigins(*gateway, before, after);
    }
    object = KeyAfter("grpc/", kind::kVirtualService, name);
  } else if (type == type_url::kListener) {
    object = KeyAfter("gateway/", kind::kGateway, name);
    if (!object) object = ServiceOfApiListener(after);
  }
  if (!object) return {};
  return {{*std::move(object), existed}};
}

}  // namespace holdfast
