#include "src/xds/tls_credentials.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "src/common/log.h"

namespace holdfast {
namespace {

// What identifies a file's content without reading it: device, inode, size
// and modification time, following symlinks (Kubernetes swaps a secret's
// files by replacing the `..data` symlink).
std::string FileSignature(const std::string& path) {
  if (path.empty()) return "-";
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "missing";
  return absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                      st.st_mtim.tv_nsec);
}

std::string FilesSignature(const XdsTlsOptions& tls) {
  return absl::StrCat(FileSignature(tls.cert_file), "|", FileSignature(tls.key_file), "|",
                      FileSignature(tls.client_ca_file));
}

}  // namespace

XdsCredentials::XdsCredentials(const XdsTlsOptions& tls, const Clock& clock,
                               MetricsRegistry* metrics)
    : tls_(tls), clock_(clock) {
  reloads_ = metrics->GetCounter("holdfast_xds_tls_reloads_total",
                                 "Times changed xDS TLS files were loaded for new connections");
  failures_ = metrics->GetCounter(
      "holdfast_xds_tls_reload_failures_total",
      "Times changed xDS TLS files were refused (the previous ones kept being served)");
  failing_ =
      metrics->GetGauge("holdfast_xds_tls_reload_failing",
                        "1 while the xDS TLS files on disk are refused and older ones are served");
}

absl::StatusOr<std::unique_ptr<XdsCredentials>> XdsCredentials::Create(const XdsTlsOptions& tls,
                                                                       const Clock& clock,
                                                                       MetricsRegistry* metrics) {
  auto credentials = std::unique_ptr<XdsCredentials>(new XdsCredentials(tls, clock, metrics));
  if (!tls.enabled()) {
    if (!tls.key_file.empty() || !tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-key and --tls-client-ca need --tls-cert; without it the xDS port would serve "
          "plain text");
    }
    credentials->credentials_ = grpc::InsecureServerCredentials();
    return credentials;
  }
  credentials->loaded_signature_ = FilesSignature(tls);
  credentials->seen_signature_ = credentials->loaded_signature_;
  absl::StatusOr<TlsMaterial> material = ReadTlsMaterial(tls);
  if (!material.ok()) return material.status();
  absl::StatusOr<std::unique_ptr<StagedTlsFiles>> staged = StagedTlsFiles::Create(*material, tls.staging_dir);
  if (!staged.ok()) return staged.status();
  credentials->staged_ = *std::move(staged);
  credentials->served_ = *std::move(material);
  const bool mutual = !tls.client_ca_file.empty();
  const StagedTlsFiles& files = *credentials->staged_;
  // The provider reads the files once here, then every refresh interval.
  credentials->provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key_path(), files.cert_path(), mutual ? files.ca_path() : "", kProviderRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions options(credentials->provider_);
  options.watch_identity_key_cert_pairs();
  if (mutual) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  credentials->credentials_ = grpc::experimental::TlsServerCredentials(options);
  if (credentials->credentials_ == nullptr) {
    return absl::InternalError("gRPC refused the xDS TLS credentials");
  }
  credentials->MarkLoaded();
  return credentials;
}

void XdsCredentials::MarkLoaded() {
  absl::MutexLock lock(&mu_);
  state_.enabled = true;
  state_.files = tls_;
  state_.loaded_at = clock_.Now();
}

void XdsCredentials::CheckFiles() {
  if (staged_ == nullptr) return;
  const std::string signature = FilesSignature(tls_);
  const bool settled = signature == seen_signature_;
  seen_signature_ = signature;
  if (!settled || signature == loaded_signature_) return;
  loaded_signature_ = signature;
  Reload();
}

void XdsCredentials::Reload() {
  absl::StatusOr<TlsMaterial> material = ReadTlsMaterial(tls_);
  absl::Status status = material.status();
  const bool changed = material.ok() && !(*material == served_);  // else only touched
  if (changed) {
    status = staged_->Replace(*material);
    if (status.ok()) served_ = *std::move(material);
  }
  absl::MutexLock lock(&mu_);
  if (!status.ok()) {
    failures_->Increment();
    failing_->Set(1);
    // Once per distinct problem: the files are re-read only when they change.
    if (state_.error != status.message()) {
      LogWarning(
          "xds TLS: the changed files are not used, new connections keep the previous "
          "ones: %s",
          status.message());
      state_.error_since = clock_.Now();
    }
    state_.error = std::string(status.message());
    ++state_.failures;
    return;
  }
  failing_->Set(0);
  if (!state_.error.empty()) LogInfo("xds TLS: the files on disk are usable again");
  state_.error.clear();
  if (!changed) return;
  ++state_.reloads;
  state_.loaded_at = clock_.Now();
  reloads_->Increment();
  LogInfo(
      "xds TLS: loaded the changed files of --tls-cert %s, --tls-key %s%s%s for new "
      "connections (gRPC reads them within %ds); open streams keep theirs",
      tls_.cert_file, tls_.key_file, tls_.client_ca_file.empty() ? "" : ", --tls-client-ca ",
      tls_.client_ca_file, kProviderRefreshSeconds);
}

TlsReloadState XdsCredentials::State() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

}  // namespace holdfast
