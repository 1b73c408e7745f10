#include "src/source/kube_gateway_api.h"

#include "absl/strings/escaping.h"
#include "src/common/forget_unused.h"
#include "src/common/utf8.h"
#include "src/gateway_api/objects.h"
#include "src/kube/json_fields.h"

namespace holdfast {

using gateway_api::kGroup;

KubeResource GatewayClassesResource() { return {kGroup, "v1", "gatewayclasses", "GatewayClass"}; }

std::vector<KubeResource> NamespacedGatewayApiResources() {
  return {{kGroup, "v1", "gateways", "Gateway"},
          {kGroup, "v1", "httproutes", "HTTPRoute"},
          {kGroup, "v1", "grpcroutes", "GRPCRoute"},
          {kGroup, "v1beta1", "referencegrants", "ReferenceGrant"}};
}

KubeResource NamespacesResource() { return {"", "v1", "namespaces", "Namespace"}; }

KubeResource TlsSecretsResource() {
  return {"", "v1", "secrets", "Secret", "type=kubernetes.io/tls"};
}

std::map<std::string, KubeResource> GatewayApiStatusResources() {
  return {{gateway_api::kGatewayClassKind, GatewayClassesResource()},
          {gateway_api::kGatewayKind, NamespacedGatewayApiResources()[0]},
          {gateway_api::kHttpRouteKind, NamespacedGatewayApiResources()[1]},
          {gateway_api::kGrpcRouteKind, NamespacedGatewayApiResources()[2]}};
}

std::optional<KubeResource> GatewayApiResourceOf(const std::string& status_kind) {
  const std::map<std::string, KubeResource> by_kind = GatewayApiStatusResources();
  auto it = by_kind.find(status_kind);
  if (it == by_kind.end()) return std::nullopt;
  return it->second;
}

namespace {

// The certificate and key of a kubernetes.io/tls Secret (base64 in
// `data`), or nullopt when either is missing or not base64.
std::optional<gateway_api::TlsSecret> TlsSecretOf(const nlohmann::json& secret) {
  const nlohmann::json& data = JsonField(secret, "data");
  gateway_api::TlsSecret out;
  if (!absl::Base64Unescape(JsonString(data, "tls.crt"), &out.certificate) ||
      !absl::Base64Unescape(JsonString(data, "tls.key"), &out.private_key) ||
      out.certificate.empty() || out.private_key.empty()) {
    return std::nullopt;
  }
  // PEM is text; other bytes (a DER key) are not a usable certificate, and
  // would end the process where the translation writes them as JSON.
  if (!IsValidUtf8(out.certificate) || !IsValidUtf8(out.private_key)) return std::nullopt;
  return out;
}

const KubeObjects& Of(const KubeObjectsByResource& objects, const std::string& resource) {
  static const KubeObjects kNone;
  auto it = objects.find(resource);
  return it == objects.end() ? kNone : it->second;
}

}  // namespace

std::shared_ptr<const gateway_api::Route> ParsedRoutes::Parse(
    const std::shared_ptr<const KubeObject>& object, bool grpc) {
  auto [it, fresh] = entries_.try_emplace(object.get());
  Entry& entry = it->second;
  entry.used = true;
  if (fresh || entry.grpc != grpc) {
    entry = {
        object, grpc,
        std::make_shared<const gateway_api::Route>(gateway_api::ParseRoute(object->object, grpc)),
        true};
  }
  return entry.route;
}

void ParsedRoutes::ForgetUnused() { holdfast::ForgetUnused(entries_); }

gateway_api::GatewayApiInput GatewayApiInputOf(const KubeObjectsByResource& objects,
                                               DiscoveredServices services, ParsedRoutes* routes) {
  ParsedRoutes once;
  if (routes == nullptr) routes = &once;
  gateway_api::GatewayApiInput input;
  for (const auto& [key, o] : Of(objects, "gatewayclasses")) {
    input.classes.push_back(gateway_api::ParseGatewayClass(o->object));
  }
  for (const auto& [key, o] : Of(objects, "gateways")) {
    input.gateways.push_back(gateway_api::ParseGateway(o->object));
  }
  for (const auto& [key, o] : Of(objects, "httproutes"))
    input.routes.push_back(routes->Parse(o, false));
  for (const auto& [key, o] : Of(objects, "grpcroutes"))
    input.routes.push_back(routes->Parse(o, true));
  routes->ForgetUnused();
  for (const auto& [key, o] : Of(objects, "referencegrants")) {
    input.grants.push_back(gateway_api::ParseReferenceGrant(o->object));
  }
  for (const auto& [key, o] : Of(objects, "namespaces")) {
    input.namespace_labels[o->name] = gateway_api::ParseMeta(o->object).labels;
  }
  for (const auto& [key, o] : Of(objects, "secrets")) {
    if (auto secret = TlsSecretOf(o->object)) input.secrets[ServiceKey{o->ns, o->name}] = *secret;
  }
  input.services = std::move(services);
  return input;
}

}  // namespace holdfast
