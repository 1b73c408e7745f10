// Fuzz target: Gateway API objects as the API server relays them (one JSON
// object per line; its kind picks the resource), through what the
// Kubernetes source does with them: the conversion's input read from the
// objects, the conversion into holdfast objects, and the status JSON of
// every object. Anyone allowed to write Gateway API objects writes this
// input; none of it may crash or throw.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/gateway_api/convert.h"
#include "src/gateway_api/status.h"
#include "src/kube/json_fields.h"
#include "src/kube/reflector.h"
#include "src/source/kube_gateway_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::map<std::string, std::string> kResourceOfKind = {
      {"GatewayClass", "gatewayclasses"}, {"Gateway", "gateways"},
      {"HTTPRoute", "httproutes"},        {"GRPCRoute", "grpcroutes"},
      {"ReferenceGrant", "referencegrants"}, {"Namespace", "namespaces"},
      {"Secret", "secrets"}};
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  holdfast::KubeObjectsByResource objects;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    nlohmann::json json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto resource = kResourceOfKind.find(holdfast::JsonString(json, "kind"));
    if (resource == kResourceOfKind.end()) continue;
    auto object = holdfast::MakeKubeObject(std::move(json));
    objects[resource->second][object->ns + "/" + object->name] = object;
  }
  const holdfast::gateway_api::Conversion conversion =
      holdfast::gateway_api::ConvertGatewayApi(holdfast::GatewayApiInputOf(objects, {}));
  const holdfast::gateway_api::GatewayApiStatuses statuses =
      holdfast::gateway_api::SettleStatuses(conversion.statuses, conversion.made_from, {});
  for (const auto& [key, status] : statuses) {
    (void)holdfast::gateway_api::GatewayApiStatusJson(*status, nlohmann::json::object(),
                                                      absl::UnixEpoch());
  }
  (void)holdfast::gateway_api::DebugStatuses(statuses, conversion, {});
  return 0;
}
