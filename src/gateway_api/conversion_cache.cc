#include "src/gateway_api/conversion_cache.h"

#include "src/common/forget_unused.h"

namespace holdfast::gateway_api {

std::optional<ConversionCache::Frame> ConversionCache::FrameOf(const GatewayApiInput& input) {
  Frame frame;
  frame.classes = input.classes;
  for (const Gateway& gateway : input.gateways) {
    if (gateway.meta.resource_version.empty()) return std::nullopt;
    frame.gateways.push_back(gateway.meta);
  }
  frame.namespace_labels = input.namespace_labels;
  frame.secrets = input.secrets;
  return frame;
}

ConversionCache::Changes ConversionCache::Begin(const GatewayApiInput& input) {
  Backdrop backdrop;
  for (const auto& [key, service] : input.services) {
    std::vector<uint32_t>& ports = backdrop.service_ports[key];
    for (const DiscoveredServicePort& port : service.ports) ports.push_back(port.port);
  }
  backdrop.grants = input.grants;
  std::optional<Frame> frame = FrameOf(input);
  Changes changes;
  changes.backdrop = !(backdrop == backdrop_);
  changes.frame = changes.backdrop || !frame || !frame_ || !(*frame == *frame_);
  backdrop_ = std::move(backdrop);
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
