#include "src/source/kube_service_discovery.h"

#include <limits>
#include <map>
#include <utility>

#include "src/common/forget_unused.h"
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
  auto spec = service.find("spec");
  if (spec == service.end()) return out;
  for (const Json& port : Items(*spec, "ports")) {
    if (!IsTcp(port)) continue;
    out.ports.push_back(DiscoveredServicePort{Field<std::string>(port, "name", ""),
                                              Field<uint32_t>(port, "port", 0),
                                              Field<std::string>(port, "appProtocol", ""),
                                              {}});
  }
  return out;
}

const Json& Member(const Json& object, const char* name) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(name);
  return it == object.end() ? kNull : *it;
}

// Whether and how an endpoint of a slice is used (see the class comment).
std::optional<bool> Draining(const Json& endpoint) {
  const Json& conditions = Member(endpoint, "conditions");
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

}  // namespace

template <typename T, typename Parse>
const T& KubeServiceDiscovery::ReadOnce(absl::flat_hash_map<std::string, Read<T>>& read,
                                        const std::string& name,
                                        const std::shared_ptr<const KubeObject>& object,
                                        Parse parse) {
  Read<T>& entry = read[name];
  if (entry.source != object) {
    entry = {object, parse(object->object), true};
    ++objects_read_;
  }
  entry.used = true;
  return entry.value;
}

namespace {

// Adds the endpoints of one slice to the sets of its Service's ports.
template <typename Slice>
void AddSlice(const Slice& slice, const DiscoveredService& service,
              std::vector<EndpointSet>* sets) {
  for (const auto& [name, target] : slice.ports) {
    for (size_t i = 0; i < service.ports.size(); ++i) {
      if (service.ports[i].name != name) continue;
      for (const auto& endpoint : slice.endpoints) {
        AddEndpoint({endpoint.address, target, endpoint.zone, endpoint.draining}, &(*sets)[i]);
      }
    }
  }
}

// What the join reads of a slice: its Service, address type, TCP ports and
// the endpoints used, one per address.
template <typename Slice>
Slice SliceFrom(const std::string& ns, const Json& object) {
  Slice out;
  const Json& labels = Member(Member(object, "metadata"), "labels");
  out.service = ServiceKey{ns, Field<std::string>(labels, "kubernetes.io/service-name", "")};
  out.address_type = Field<std::string>(object, "addressType", "");
  for (const Json& port : Items(object, "ports")) {
    const uint32_t target = Field<uint32_t>(port, "port", 0);
    if (!IsTcp(port) || target == 0) continue;
    out.ports.emplace_back(Field<std::string>(port, "name", ""), target);
  }
  for (const Json& endpoint : Items(object, "endpoints")) {
    std::optional<bool> draining = Draining(endpoint);
    if (!draining.has_value()) continue;
    const std::string zone = Field<std::string>(endpoint, "zone", "");
    for (const Json& address : Items(endpoint, "addresses")) {
      if (!address.is_string()) continue;
      out.endpoints.push_back({address.get<std::string>(), zone, *draining});
    }
  }
  return out;
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
    out.emplace(ServiceKey{object->ns, object->name},
                ReadOnce(services_, name, object, ServiceFrom));
  }
  std::map<ServiceKey, std::vector<EndpointSet>> endpoints;
  for (const auto& entry : slices) {
    const std::string& name = entry.first;
    const std::shared_ptr<const KubeObject>& object = entry.second;  // captured below
    const Slice& slice = ReadOnce(slices_, name, object, [&](const Json& json) {
      return SliceFrom<Slice>(object->ns, json);
    });
    auto service = out.find(slice.service);
    if (service == out.end()) continue;
    const std::string& type = slice.address_type;
    if (type != "IPv4" && type != "IPv6") {
      if (skipped_logged_.insert(name).second) {
        LogInfo(
            "EndpointSlice %s of Service %s/%s skipped: addressType %s (only IPv4 and IPv6 "
            "endpoints are served)",
            name, slice.service.ns, slice.service.name, type);
      }
      continue;
    }
    auto [sets, fresh] = endpoints.try_emplace(slice.service);
    if (fresh) sets->second.resize(service->second.ports.size());
    AddSlice(slice, service->second, &sets->second);
  }
  for (auto& [key, sets] : endpoints) {
    std::vector<DiscoveredServicePort>& ports = out.at(key).ports;
    for (size_t i = 0; i < ports.size(); ++i) {
      for (auto& [where, endpoint] : sets[i]) ports[i].endpoints.push_back(std::move(endpoint));
    }
  }
  ForgetUnused(services_);
  ForgetUnused(slices_);
  return out;
}

}  // namespace holdfast
