#pragma once

#include <string>
#include <vector>

#include "grpcpp/security/auth_context.h"

namespace holdfast {

// What a stream's verified client certificate says about its holder: the
// parts an identity can be taken from. Empty when the connection has no
// client certificate (plain text, TLS without --tls-client-ca).
struct PeerCertificate {
  bool present = false;
  std::string common_name;
  std::vector<std::string> dns_sans;
  std::vector<std::string> uri_sans;
};

// Reads the certificate gRPC verified during the handshake from the call's
// AuthContext (peer_dns, peer_uri, x509_common_name). gRPC sets these only
// for a certificate that chained to --tls-client-ca, so nothing here is a
// claim of the client's.
PeerCertificate PeerCertificateFrom(const grpc::AuthContext& context);

}  // namespace holdfast
