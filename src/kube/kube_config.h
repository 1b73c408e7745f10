#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/common/clock.h"

namespace holdfast {

// Where an API server is and how to authenticate to it, resolved from a
// kubeconfig or from a pod's service account. File contents are read once,
// here, except the token file, which rotates (see BearerToken).
struct KubeConfig {
  std::string server;  // https://HOST:PORT, no trailing '/'
  std::string ca_pem;  // CA bundle that signs the server; empty: the system's
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // a bearer token given inline
  std::string token_file;  // a bearer token file, re-read when it changes
  bool insecure_skip_tls_verify = false;
  std::string ns = "default";  // the context's namespace
  std::string origin;          // "kubeconfig PATH (context NAME)" or "in-cluster", for logs
};

struct KubeconfigOptions {
  std::string path;
  std::string context;  // empty: the current context
  // `insecure-skip-tls-verify: true` is refused unless this is set: it
  // would let anyone on the path serve gateway configuration.
  bool allow_insecure = false;
};

// Reads a kubeconfig file. Errors name the file and the key path, e.g.
// "kubeconfig /x: users[name=admin].user.client-key: cannot read ...".
// Relative file paths inside resolve against the kubeconfig's directory,
// as kubectl resolves them.
absl::StatusOr<KubeConfig> LoadKubeconfig(const KubeconfigOptions& options);

// Same, from text; `path` is used in errors and to resolve relative paths.
absl::StatusOr<KubeConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                           const KubeconfigOptions& options);

struct InClusterOptions {
  // Where the kubelet mounts the service account (token, ca.crt, namespace).
  std::string root = "/var/run/secrets/kubernetes.io/serviceaccount";
  // KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
  std::string host;
  std::string port;

  // Host and port from the process environment, the default root.
  static InClusterOptions FromEnvironment();
};

// The configuration of a pod: the API server from the service environment
// variables, the service account's CA and namespace, and its token file
// (projected tokens rotate; BearerToken re-reads it).
absl::StatusOr<KubeConfig> LoadInCluster(const InClusterOptions& options);

// The bearer token to send, if any: an inline token, or a token file
// re-read when its modification time or size changes, checked at most once
// per `recheck` (kubelets rotate projected tokens well before they expire;
// client-go re-reads every minute too). Thread-safe.
class BearerToken {
 public:
  BearerToken(const KubeConfig& config, const Clock& clock,
              absl::Duration recheck = absl::Minutes(1));
  // The current token ("" when none is configured). When the file cannot be
  // read, the last token read is kept and the error returned only if there
  // is none.
  absl::StatusOr<std::string> Current();
  // Checks the file again on the next Current(), e.g. after a 401.
  void Invalidate();

 private:
  const std::string inline_token_;
  const std::string file_;
  const Clock& clock_;
  const absl::Duration recheck_;
  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  bool checked_once_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration checked_at_ ABSL_GUARDED_BY(mu_);
  std::pair<int64_t, int64_t> stamp_ ABSL_GUARDED_BY(mu_) = {-1, -1};  // mtime ns, size
};

}  // namespace holdfast
