#include "src/xds/peer_certificate.h"

#include "grpc/grpc_security_constants.h"

namespace holdfast {
namespace {

std::vector<std::string> Values(const grpc::AuthContext& context, const char* name) {
  std::vector<std::string> values;
  for (const grpc::string_ref& value : context.FindPropertyValues(name)) {
    values.emplace_back(value.data(), value.size());
  }
  return values;
}

}  // namespace

PeerCertificate PeerCertificateFrom(const grpc::AuthContext& context) {
  PeerCertificate cert;
  // A peer identity exists only once the handshake verified a certificate.
  // (holdfast asks for client certificates only with REQUIRE_AND_VERIFY.)
  cert.present = !context.FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
  if (!cert.present) return cert;
  std::vector<std::string> common_names = Values(context, GRPC_X509_CN_PROPERTY_NAME);
  if (!common_names.empty()) cert.common_name = common_names.front();
  cert.dns_sans = Values(context, GRPC_PEER_DNS_PROPERTY_NAME);
  cert.uri_sans = Values(context, GRPC_PEER_URI_PROPERTY_NAME);
  return cert;
}

}  // namespace holdfast
