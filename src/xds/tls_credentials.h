#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace holdfast {

// TLS on the xDS port. With `client_ca_file` set, clients must present a
// certificate signed by that CA (mutual TLS).
struct XdsTlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  bool enabled() const { return !cert_file.empty(); }
};

// Credentials for the xDS port: plain text when no TLS option is set, else
// TLS from the given files. Every file is read and checked here (PEM that
// parses, a key that matches the certificate), so a mistake is reported as
// what it is, never as "cannot listen", and a key or CA given without a
// certificate is an error instead of a silent plain-text port.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeXdsCredentials(
    const XdsTlsOptions& tls);

}  // namespace holdfast
