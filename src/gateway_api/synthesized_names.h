#pragma once
// Names of the holdfast objects made from Gateway API objects. Every one
// contains ':', which no object decoded from a file, etcd or a holdfast.dev
// custom resource can have in its name (src/model/decode.cc allows only
// lower case letters, digits, '-' and '.'), so they never collide with a
// user's objects; like those, they contain no '/', which joins namespaces
// and names in Envoy resource names (src/translate/names.h).

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace holdfast::gateway_api {

inline constexpr char kPrefix[] = "gateway-api:";

// The holdfast Gateway (one Envoy listener) of a Gateway's listeners on one
// port, in the Gateway's namespace.
inline std::string GatewayName(const std::string& gateway, uint32_t port) {
  return absl::StrCat(kPrefix, gateway, ":", port);
}
// The virtual service of one hostname ("*": any) on that listener.
inline std::string VirtualServiceName(const std::string& gateway, uint32_t port,
                                      const std::string& hostname) {
  return absl::StrCat(kPrefix, gateway, ":", port, ":", hostname);
}
// The upstream of one Service port, in the Service's namespace; gRPC
// routes get one that speaks HTTP/2 whatever the port's appProtocol says.
inline std::string UpstreamName(const std::string& service, uint32_t port, bool http2) {
  return absl::StrCat(kPrefix, http2 ? "h2:" : "", service, ":", port);
}
// The TLS material of a Secret, in the namespace of the Gateway using it.
inline std::string SecretName(const std::string& ns, const std::string& name) {
  return absl::StrCat(kPrefix, "secret:", ns, ":", name);
}
// An upstream that never exists: routes to it answer like routes to a
// missing upstream (--missing-upstream-status), which is how invalid
// backendRefs are served.
inline constexpr char kInvalidBackend[] = "gateway-api:invalid-backend";

}  // namespace holdfast::gateway_api
