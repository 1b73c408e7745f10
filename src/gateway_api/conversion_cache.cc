#include "src/gateway_api/conversion_cache.h"

#include "src/common/forget_unused.h"

namespace holdfast::gateway_api {

ConversionCache::Frame ConversionCache::FrameOf(const GatewayApiInput& input) {
  Frame frame{input.classes, input.gateways};
  for (GatewayClass& c : frame.classes) c.meta.resource_version.clear();
  for (Gateway& gateway : frame.gateways) gateway.meta.resource_version.clear();
  frame.namespace_labels = input.namespace_labels;
  frame.secrets = input.secrets;
  return frame;
}

ConversionCache::ServicePorts ConversionCache::PortsOf(const GatewayApiInput& input) {
  ServicePorts ports;
  for (const auto& [key, service] : input.services) {
    std::vector<uint32_t>& numbers = ports[key];
    for (const DiscoveredServicePort& port : service.ports) numbers.push_back(port.port);
  }
  return ports;
}

// The Services added, gone or with other ports: one walk of both maps in
// key order.
std::set<ServiceKey> ConversionCache::Changed(const ServicePorts& before,
                                              const ServicePorts& after) {
  std::set<ServiceKey> changed;
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      changed.insert((b++)->first);
    } else if (b == before.end() || a->first < b->first) {
      changed.insert((a++)->first);
    } else {
      if (a->second != b->second) changed.insert(a->first);
      ++a;
      ++b;
    }
  }
  return changed;
}

RoutePlacements::Changes ConversionCache::Begin(const GatewayApiInput& input) {
  ServicePorts ports = PortsOf(input);
  Frame frame = FrameOf(input);
  RoutePlacements::Changes changes;
  changes.grants = grants_ != input.grants;
  changes.frame = changes.grants || !frame_ || !(frame == *frame_);
  grants_ = input.grants;
  changes.services = Changed(service_ports_, ports);
  service_ports_ = std::move(ports);
  frame_ = std::move(frame);
  return changes;
}

void ConversionCache::End() {
  decoder_.EndConversion();
  ForgetUnused(gateways_);
  ForgetUnused(upstreams_);
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
