#include "src/xds/tls_credentials.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "src/common/read_file.h"

namespace holdfast {
namespace {

constexpr int64_t kMaxPemBytes = 1 << 20;

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no PEM block found";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadRegularFile(path, kMaxPemBytes);
  if (!pem.ok())
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", pem.status().message()));
  return pem;
}

// Checks that `cert_pem` holds a certificate and `key_pem` the private key
// that matches it.
absl::Status CheckKeyPair(const XdsTlsOptions& tls, const std::string& cert_pem,
                          const std::string& key_pem) {
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-cert ", tls.cert_file, ": not a PEM certificate (", OpenSslError(), ")"));
  }
  absl::Cleanup free_cert = [cert] { X509_free(cert); };
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key ", tls.key_file, ": not a PEM private key (", OpenSslError(), ")"));
  }
  absl::Cleanup free_key = [key] { EVP_PKEY_free(key); };
  if (X509_check_private_key(cert, key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--tls-key ", tls.key_file,
                                                   " does not match the certificate in --tls-cert ",
                                                   tls.cert_file));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeXdsCredentials(
    const XdsTlsOptions& tls) {
  if (!tls.enabled()) {
    if (!tls.key_file.empty() || !tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-key and --tls-client-ca need --tls-cert; without it the xDS port would serve "
          "plain text");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.key_file.empty()) return absl::InvalidArgumentError("--tls-cert needs --tls-key");
  absl::StatusOr<std::string> cert = ReadPem("--tls-cert", tls.cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls-key", tls.key_file);
  if (!key.ok()) return key.status();
  if (absl::Status pair = CheckKeyPair(tls, *cert, *key); !pair.ok()) return pair;
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!tls.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("--tls-client-ca", tls.client_ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace holdfast
