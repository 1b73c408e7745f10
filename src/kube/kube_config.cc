#include "src/kube/kube_config.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/common/read_file.h"
#include "yaml-cpp/yaml.h"

namespace holdfast {
namespace {

constexpr int64_t kMaxFileBytes = 4 << 20;

// Reads one kubeconfig; every error carries the key path it is about.
class KubeconfigReader {
 public:
  KubeconfigReader(const std::string& path) : path_(path) {}

  absl::Status Error(const std::string& key_path, const std::string& message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig ", path_, ": ", key_path, key_path.empty() ? "" : ": ", message));
  }

  // The entry of `list` (clusters, users, contexts) named `name`, and the
  // path of its body ("clusters[name=x].cluster").
  absl::StatusOr<std::pair<YAML::Node, std::string>> Named(const YAML::Node& root,
                                                           const std::string& list,
                                                           const std::string& body,
                                                           const std::string& name) const {
    YAML::Node entries = root[list];
    if (entries && !entries.IsSequence()) return Error(list, "must be a list");
    if (entries) {
      for (const YAML::Node& entry : entries) {
        if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() &&
            entry["name"].as<std::string>() == name) {
          std::string at = absl::StrCat(list, "[name=", name, "].", body);
          if (!entry[body] || !entry[body].IsMap()) return Error(at, "required (a map)");
          return std::pair{entry[body], at};
        }
      }
    }
    return Error(list, absl::StrCat("no entry named \"", name, "\""));
  }

  // A string field, "" when absent.
  absl::StatusOr<std::string> String(const YAML::Node& map, const std::string& at,
                                     const std::string& key) const {
    YAML::Node value = map[key];
    if (!value || value.IsNull()) return std::string();
    if (!value.IsScalar()) return Error(absl::StrCat(at, ".", key), "must be a string");
    return value.as<std::string>();
  }

  // `key-data` (base64 inline) or `key` (a file, relative to the kubeconfig).
  absl::StatusOr<std::string> DataOrFile(const YAML::Node& map, const std::string& at,
                                         const std::string& key) const {
    absl::StatusOr<std::string> data = String(map, at, key + "-data");
    if (!data.ok()) return data.status();
    absl::StatusOr<std::string> file = String(map, at, key);
    if (!file.ok()) return file.status();
    if (!data->empty() && !file->empty()) {
      return Error(absl::StrCat(at, ".", key), absl::StrCat("and ", key, "-data are exclusive"));
    }
    if (!data->empty()) {
      std::string decoded;
      if (!absl::Base64Unescape(*data, &decoded)) {
        return Error(absl::StrCat(at, ".", key, "-data"), "is not base64");
      }
      return decoded;
    }
    if (file->empty()) return std::string();
    absl::StatusOr<std::string> contents = ReadRegularFile(Resolve(*file), kMaxFileBytes);
    if (!contents.ok()) {
      return Error(absl::StrCat(at, ".", key), std::string(contents.status().message()));
    }
    return *contents;
  }

  std::string Resolve(const std::string& file) const {
    std::filesystem::path p(file);
    if (p.is_absolute()) return file;
    return (std::filesystem::path(path_).parent_path() / p).string();
  }

 private:
  const std::string path_;
};

absl::Status ReadCluster(const KubeconfigReader& r, const YAML::Node& cluster,
                         const std::string& at, const KubeconfigOptions& options,
                         KubeConfig* config) {
  absl::StatusOr<std::string> server = r.String(cluster, at, "server");
  if (!server.ok()) return server.status();
  if (server->empty()) return r.Error(at + ".server", "required");
  if (!absl::StartsWith(*server, "https://") && !absl::StartsWith(*server, "http://")) {
    return r.Error(at + ".server", "must be an https:// URL");
  }
  config->server = std::string(absl::StripSuffix(*server, "/"));
  absl::StatusOr<std::string> ca = r.DataOrFile(cluster, at, "certificate-authority");
  if (!ca.ok()) return ca.status();
  config->ca_pem = *ca;
  YAML::Node insecure = cluster["insecure-skip-tls-verify"];
  if (insecure && insecure.IsScalar() && insecure.as<std::string>() == "true") {
    if (!options.allow_insecure) {
      return r.Error(at + ".insecure-skip-tls-verify",
                     "refused: anyone on the path could serve configuration (pass "
                     "--kube-allow-insecure to accept it)");
    }
    config->insecure_skip_tls_verify = true;
  }
  return absl::OkStatus();
}

absl::Status ReadUser(const KubeconfigReader& r, const YAML::Node& user, const std::string& at,
                      KubeConfig* config) {
  for (const char* unsupported : {"exec", "auth-provider", "username"}) {
    if (user[unsupported]) {
      return r.Error(absl::StrCat(at, ".", unsupported),
                     "not supported: use a token, a token file or a client certificate");
    }
  }
  absl::StatusOr<std::string> cert = r.DataOrFile(user, at, "client-certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = r.DataOrFile(user, at, "client-key");
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty()) {
    return r.Error(at + (cert->empty() ? ".client-certificate" : ".client-key"),
                   "required with the other half of the client key pair");
  }
  config->client_cert_pem = *cert;
  config->client_key_pem = *key;
  absl::StatusOr<std::string> token = r.String(user, at, "token");
  if (!token.ok()) return token.status();
  absl::StatusOr<std::string> token_file = r.String(user, at, "tokenFile");
  if (!token_file.ok()) return token_file.status();
  config->token = *token;
  if (!token_file->empty()) config->token_file = r.Resolve(*token_file);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KubeConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                           const KubeconfigOptions& options) {
  KubeconfigReader r(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return r.Error("", absl::StrCat("not YAML: ", e.what()));
  }
  if (!root.IsMap()) return r.Error("", "must be a map");
  absl::StatusOr<std::string> current = r.String(root, "", "current-context");
  if (!current.ok()) return r.Error("current-context", "must be a string");
  std::string context_name = options.context.empty() ? *current : options.context;
  if (context_name.empty()) {
    return r.Error("current-context", "not set (pass --kube-context NAME)");
  }
  auto context = r.Named(root, "contexts", "context", context_name);
  if (!context.ok()) return context.status();
  const auto& [ctx, ctx_at] = *context;
  absl::StatusOr<std::string> cluster_name = r.String(ctx, ctx_at, "cluster");
  if (!cluster_name.ok()) return cluster_name.status();
  absl::StatusOr<std::string> user_name = r.String(ctx, ctx_at, "user");
  if (!user_name.ok()) return user_name.status();
  absl::StatusOr<std::string> ns = r.String(ctx, ctx_at, "namespace");
  if (!ns.ok()) return ns.status();
  if (cluster_name->empty()) return r.Error(ctx_at + ".cluster", "required");

  KubeConfig config;
  config.origin = absl::StrCat("kubeconfig ", path, " (context ", context_name, ")");
  if (!ns->empty()) config.ns = *ns;
  auto cluster = r.Named(root, "clusters", "cluster", *cluster_name);
  if (!cluster.ok()) return cluster.status();
  if (absl::Status s = ReadCluster(r, cluster->first, cluster->second, options, &config); !s.ok()) {
    return s;
  }
  if (!user_name->empty()) {
    auto user = r.Named(root, "users", "user", *user_name);
    if (!user.ok()) return user.status();
    if (absl::Status s = ReadUser(r, user->first, user->second, &config); !s.ok()) return s;
  }
  return config;
}

absl::StatusOr<KubeConfig> LoadKubeconfig(const KubeconfigOptions& options) {
  absl::StatusOr<std::string> text = ReadRegularFile(options.path, kMaxFileBytes);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig ", options.path, ": ", text.status().message()));
  }
  return ParseKubeconfig(*text, options.path, options);
}

InClusterOptions InClusterOptions::FromEnvironment() {
  InClusterOptions options;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  options.host = host ? host : "";
  options.port = port ? port : "";
  return options;
}

absl::StatusOr<KubeConfig> LoadInCluster(const InClusterOptions& options) {
  if (options.host.empty() || options.port.empty()) {
    return absl::FailedPreconditionError(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (is this a "
        "pod?)");
  }
  KubeConfig config;
  config.origin = "in-cluster service account";
  // An IPv6 host needs brackets in a URL.
  bool v6 = options.host.find(':') != std::string::npos;
  config.server =
      absl::StrCat("https://", v6 ? "[" : "", options.host, v6 ? "]" : "", ":", options.port);
  absl::StatusOr<std::string> ca = ReadRegularFile(options.root + "/ca.crt", kMaxFileBytes);
  if (!ca.ok())
    return absl::FailedPreconditionError(absl::StrCat("in-cluster: ", ca.status().message()));
  config.ca_pem = *ca;
  config.token_file = options.root + "/token";
  absl::StatusOr<std::string> token = ReadRegularFile(config.token_file, kMaxFileBytes);
  if (!token.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("in-cluster: ", token.status().message()));
  }
  absl::StatusOr<std::string> ns = ReadRegularFile(options.root + "/namespace", kMaxFileBytes);
  if (ns.ok() && !absl::StripAsciiWhitespace(*ns).empty()) {
    config.ns = std::string(absl::StripAsciiWhitespace(*ns));
  }
  return config;
}

BearerToken::BearerToken(const KubeConfig& config, const Clock& clock, absl::Duration recheck)
    : inline_token_(config.token), file_(config.token_file), clock_(clock), recheck_(recheck) {}

absl::StatusOr<std::string> BearerToken::Current() {
  if (file_.empty()) return inline_token_;
  absl::MutexLock lock(&mu_);
  absl::Duration now = clock_.Monotonic();
  if (checked_once_ && now - checked_at_ < recheck_) return token_;
  checked_once_ = true;
  checked_at_ = now;
  struct stat st;
  if (stat(file_.c_str(), &st) != 0) {
    if (!token_.empty()) return token_;
    return absl::UnauthenticatedError(absl::StrCat("token file ", file_, ": cannot stat"));
  }
  std::pair<int64_t, int64_t> stamp{
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
      static_cast<int64_t>(st.st_size)};
  if (stamp == stamp_) return token_;
  absl::StatusOr<std::string> text = ReadRegularFile(file_, kMaxFileBytes);
  if (!text.ok()) {
    if (!token_.empty()) return token_;
    return absl::UnauthenticatedError(absl::StrCat("token file: ", text.status().message()));
  }
  stamp_ = stamp;
  token_ = std::string(absl::StripAsciiWhitespace(*text));
  return token_;
}

void BearerToken::Invalidate() {
  absl::MutexLock lock(&mu_);
  checked_once_ = false;
}

}  // namespace holdfast
