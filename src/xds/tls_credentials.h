#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/xds/tls_files.h"

namespace holdfast {

// How the xDS port's TLS files stand, for /debug/tls.
struct TlsReloadState {
  bool enabled = false;
  XdsTlsOptions files;
  absl::Time loaded_at = absl::InfinitePast();  // when the served material was read
  uint64_t reloads = 0;                         // successful reloads since start
  uint64_t failures = 0;
  // Why the files on disk are not served, while they are not; empty when
  // what is served is what is on disk.
  std::string error;
  absl::Time error_since = absl::InfinitePast();
};

// The xDS port's credentials: plain text when no TLS option is set, else
// TLS (mutual with --tls-client-ca) whose files are reloaded when they
// change, for new connections; established connections keep the material
// they were handshaken with.
//
// Every file is read and checked at start (PEM that parses, a key that
// matches the certificate), so a mistake is reported as what it is, never
// as "cannot listen", and a key or CA given without a certificate is an
// error instead of a silent plain-text port. A changed file is checked the
// same way before it reaches gRPC: gRPC's FileWatcherCertificateProvider
// watches a private copy (StagedTlsFiles) that only checked material is
// written to, so a bad new file never takes the port down; the old material
// keeps being served and the problem is logged, counted and shown in
// State().
class XdsCredentials {
 public:
  // How often gRPC re-reads the private copy.
  static constexpr unsigned kProviderRefreshSeconds = 1;

  static absl::StatusOr<std::unique_ptr<XdsCredentials>> Create(const XdsTlsOptions& tls,
                                                                const Clock& clock,
                                                                MetricsRegistry* metrics);

  std::shared_ptr<grpc::ServerCredentials> server_credentials() const { return credentials_; }

  // Called periodically (XdsServer's check). Reloads the files once they
  // changed and then stayed the same for one call, so that a certificate
  // and key replaced one after the other are read together.
  void CheckFiles();

  TlsReloadState State() const;

 private:
  XdsCredentials(const XdsTlsOptions& tls, const Clock& clock, MetricsRegistry* metrics);
  void MarkLoaded();  // TLS material is served from now on
  void Reload();

  const XdsTlsOptions tls_;
  const Clock& clock_;
  Counter* reloads_ = nullptr;
  Counter* failures_ = nullptr;
  Gauge* failing_ = nullptr;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::unique_ptr<StagedTlsFiles> staged_;
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider_;
  // Touched only by CheckFiles (one thread).
  std::string seen_signature_;    // the files' metadata at the last call
  std::string loaded_signature_;  // ... when they were last read
  TlsMaterial served_;

  mutable absl::Mutex mu_;
  TlsReloadState state_ ABSL_GUARDED_BY(mu_);
};

}  // namespace holdfast
