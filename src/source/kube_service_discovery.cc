#include "src/source/kube_service_discovery.h"

#include <limits>
#include <map>
#include <utility>

#include "src/common/log.h"

namespace holdfast {
namespace {

using Json = nlohmann::json;

// A field of an object, or `fallback` when absent, null or of another type.
template <typename T>
T Field(const Json& object, const char* name, T fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else {
    if (!it->is_number_integer()) return fallback;
    const int64_t value = it->template get<int64_t>();
    return value >= 0 && value <= std::numeric_limits<T>::max() ? static_cast<T>(value) : fallback;
  }
}

const Json& Items(const Json& object, const char* name) {
  static const Json kEmpty = Json::array();
  if (!object.is_object()) return kEmpty;
  auto it = object.find(name);
  return it != object.end() && it->is_array() ? *it : kEmpty;
}

bool IsTcp(const Json& port) { return Field<std::string>(port, "protocol", "TCP") == "TCP"; }

DiscoveredService ServiceFrom(const Json& service) {
  DiscoveredService out;
  const Json spec = service.value("spec", Json::object());
  for (const Json& port : Items(spec, "ports")) {
    if (!IsTcp(port)) continue;
    out.ports.push_back(DiscoveredServicePort{Field<std::string>(port, "name", ""),
                                              Field<uint32_t>(port, "port", 0),
                                              Field<std::string>(port, "appProtocol", ""),
                                              {}});
  }
  return out;
}

// Whether and how an endpoint of a slice is used (see the class comment).
std::optional<bool> Draining(const Json& endpoint) {
  const Json conditions = endpoint.value("conditions", Json::object());
  if (Field<bool>(conditions, "ready", true)) return false;
  if (Field<bool>(conditions, "serving", true) && Field<bool>(conditions, "terminating", false)) {
    return true;
  }
  return std::nullopt;
}

// Endpoints of one Service port by address and port, while slices are read.
using EndpointSet = std::map<std::pair<std::string, uint32_t>, ServiceEndpoint>;

void AddEndpoint(ServiceEndpoint endpoint, EndpointSet* set) {
  auto [it, inserted] = set->try_emplace({endpoint.address, endpoint.port}, endpoint);
  if (!inserted && it->second.draining && !endpoint.draining) it->second = std::move(endpoint);
}

// Adds the endpoints of one slice to the sets of its Service's ports.
void AddSlice(const Json& slice, const DiscoveredService& service, std::vector<EndpointSet>* sets) {
  for (const Json& slice_port : Items(slice, "ports")) {
    const uint32_t target = Field<uint32_t>(slice_port, "port", 0);
    if (!IsTcp(slice_port) || target == 0) continue;
    const std::string name = Field<std::string>(slice_port, "name", "");
    for (size_t i = 0; i < service.ports.size(); ++i) {
      if (service.ports[i].name != name) continue;
      for (const Json& endpoint : Items(slice, "endpoints")) {
        std::optional<bool> draining = Draining(endpoint);
        if (!draining.has_value()) continue;
        const std::string zone = Field<std::string>(endpoint, "zone", "");
        for (const Json& address : Items(endpoint, "addresses")) {
          if (!address.is_string()) continue;
          AddEndpoint({address.get<std::string>(), target, zone, *draining}, &(*sets)[i]);
        }
      }
    }
  }
}

}  // namespace

KubeResource ServicesResource() { return {"", "v1", "services", "Service"}; }

KubeResource EndpointSlicesResource() {
  return {"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"};
}

DiscoveredServices KubeServiceDiscovery::Discover(const KubeObjects& services,
                                                  const KubeObjects& slices) {
  DiscoveredServices out;
  for (const auto& [name, object] : services) {
    out.emplace(ServiceKey{object->ns, object->name}, ServiceFrom(object->object));
  }
  std::map<ServiceKey, std::vector<EndpointSet>> endpoints;
  for (const auto& [name, object] : slices) {
    const Json labels =
        object->object.value("metadata", Json::object()).value("labels", Json::object());
    const ServiceKey key{object->ns, Field<std::string>(labels, "kubernetes.io/service-name", "")};
    auto service = out.find(key);
    if (service == out.end()) continue;
    const std::string type = Field<std::string>(object->object, "addressType", "");
    if (type != "IPv4" && type != "IPv6") {
      if (skipped_logged_.insert(name).second) {
        LogInfo(
            "EndpointSlice %s of Service %s/%s skipped: addressType %s (only IPv4 and IPv6 "
            "endpoints are served)",
            name, key.ns, key.name, type);
      }
      continue;
    }
    auto [sets, fresh] = endpoints.try_emplace(key);
    if (fresh) sets->second.resize(service->second.ports.size());
    AddSlice(object->object, service->second, &sets->second);
  }
  for (auto& [key, sets] : endpoints) {
    std::vector<DiscoveredServicePort>& ports = out.at(key).ports;
    for (size_t i = 0; i < ports.size(); ++i) {
      for (auto& [where, endpoint] : sets[i]) ports[i].endpoints.push_back(std::move(endpoint));
    }
  }
  return out;
}

}  // namespace holdfast
