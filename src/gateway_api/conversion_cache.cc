#include "src/gateway_api/conversion_cache.h"

#include "absl/strings/str_cat.h"
#include "src/common/forget_unused.h"

namespace holdfast::gateway_api {

void ConversionCache::Begin(const GatewayApiInput& input) {
  Backdrop backdrop;
  for (const auto& [key, service] : input.services) {
    std::vector<uint32_t>& ports = backdrop.service_ports[key];
    for (const DiscoveredServicePort& port : service.ports) ports.push_back(port.port);
  }
  backdrop.grants = input.grants;
  if (backdrop == backdrop_) return;
  routes_.clear();
  backdrop_ = std::move(backdrop);
}

void ConversionCache::End() {
  decoder_.EndConversion();
  ForgetUnused(routes_);
  ForgetUnused(services_);
  ForgetUnused(gateways_);
}

std::string ConversionCache::RouteKey(const Route& route) {
  const Meta& m = route.meta;
  return absl::StrCat(route.kind, "/", m.ns, "/", m.name, "\n", m.resource_version, "\n",
                      m.generation, "\n", m.creation_timestamp);
}

const ConvertedRoute* ConversionCache::FindRoute(const Route& route) {
  if (route.meta.resource_version.empty()) return nullptr;
  auto it = routes_.find(RouteKey(route));
  if (it == routes_.end()) return nullptr;
  it->second.used = true;
  return &it->second.value;
}

void ConversionCache::KeepRoute(const Route& route, const ConvertedRoute& converted) {
  if (route.meta.resource_version.empty()) return;
  routes_[RouteKey(route)] = {converted, true};
}

const DecodedService* ConversionCache::FindService(
    const std::string& name, const std::vector<std::shared_ptr<const nlohmann::json>>& routes) {
  auto it = services_.find(name);
  if (it == services_.end() || it->second.value.routes != routes) return nullptr;
  it->second.used = true;
  return &it->second.value;
}

void ConversionCache::KeepService(const std::string& name, DecodedService decoded) {
  services_[name] = {std::move(decoded), true};
}

const EmittedGateway* ConversionCache::FindGateway(const std::string& name,
                                                   const EmittedGateway& wanted) {
  auto it = gateways_.find(name);
  if (it == gateways_.end() || it->second.value.services != wanted.services ||
      it->second.value.tls != wanted.tls) {
    return nullptr;
  }
  it->second.used = true;
  return &it->second.value;
}

const EmittedGateway& ConversionCache::KeepGateway(const std::string& name,
                                                   EmittedGateway emitted) {
  Entry<EmittedGateway>& entry = gateways_[name];
  entry = {std::move(emitted), true};
  return entry.value;
}

}  // namespace holdfast::gateway_api
