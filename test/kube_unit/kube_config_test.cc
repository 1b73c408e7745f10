// Kubeconfig variants, in-cluster configuration from a temporary root, and
// token rotation on simulated time.
#include "src/kube/kube_config.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

class TempDir {
 public:
  TempDir() {
    char dir_template[] = "/tmp/holdfast-kubeconfig-XXXXXX";
    dir_ = mkdtemp(dir_template);
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

std::string Kubeconfig(const std::string& cluster_extra, const std::string& user_body) {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: admin@kube
clusters:
- name: kube
  cluster:
    server: https://127.0.0.1:6443/
)",
                      cluster_extra, R"(
- name: other
  cluster: {server: "https://10.0.0.1:443"}
contexts:
- name: admin@kube
  context: {cluster: kube, user: admin, namespace: shop}
- name: other
  context: {cluster: other, user: admin}
users:
- name: admin
  user:
)",
                      user_body, "\n");
}

TEST(KubeconfigTest, CurrentContextWithInlineCaAndToken) {
  std::string ca = absl::Base64Escape("CA PEM");
  absl::StatusOr<KubeConfig> config = ParseKubeconfig(
      Kubeconfig("    certificate-authority-data: " + ca, "    token: secret"), "/k", {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, "CA PEM");
  EXPECT_EQ(config->token, "secret");
  EXPECT_EQ(config->ns, "shop");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
}

TEST(KubeconfigTest, NamedContextAndDefaultNamespace) {
  absl::StatusOr<KubeConfig> config =
      ParseKubeconfig(Kubeconfig("", "    token: t"), "/k", {.context = "other"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:443");
  EXPECT_EQ(config->ns, "default");
}

TEST(KubeconfigTest, FilesResolveRelativeToTheKubeconfig) {
  TempDir dir;
  dir.Write("ca.crt", "CA");
  dir.Write("client.crt", "CERT");
  dir.Write("client.key", "KEY");
  dir.Write("token", "file-token\n");
  std::string path = dir.Write(
      "config", Kubeconfig("    certificate-authority: ca.crt",
                           "    client-certificate: client.crt\n    client-key: " + dir.path() +
                               "/client.key\n    tokenFile: token"));
  absl::StatusOr<KubeConfig> config = LoadKubeconfig({.path = path});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_EQ(config->token_file, dir.path() + "/token");
}

struct BadCase {
  std::string name;
  std::string text;
  std::string error;  // a substring: the key path and the reason
};

TEST(KubeconfigTest, ErrorsNameTheKeyPath) {
  const std::vector<BadCase> cases = {
      {"insecure", Kubeconfig("    insecure-skip-tls-verify: true", "    token: t"),
       "clusters[name=kube].cluster.insecure-skip-tls-verify: refused"},
      {"bad base64", Kubeconfig("    certificate-authority-data: '%%%'", "    token: t"),
       "clusters[name=kube].cluster.certificate-authority-data: is not base64"},
      {"missing file", Kubeconfig("    certificate-authority: /nonexistent/ca", "    token: t"),
       "clusters[name=kube].cluster.certificate-authority: "},
      {"half a key pair", Kubeconfig("", "    client-certificate-data: Q0VSVA=="),
       "users[name=admin].user.client-key: required"},
      {"exec plugin", Kubeconfig("", "    exec: {command: aws}"),
       "users[name=admin].user.exec: not supported"},
      {"no such context", "current-context: nope\ncontexts: []\n",
       "contexts: no entry named \"nope\""},
      {"no current context", "clusters: []\n", "current-context: not set"},
      {"not a map", "- a\n", "must be a map"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<KubeConfig> config = ParseKubeconfig(c.text, "/k", {});
    ASSERT_FALSE(config.ok()) << c.name;
    EXPECT_TRUE(absl::StrContains(config.status().message(), c.error))
        << c.name << ": " << config.status();
    EXPECT_TRUE(absl::StartsWith(config.status().message(), "kubeconfig /k")) << c.name;
  }
}

TEST(KubeconfigTest, InsecureAcceptedOnlyWhenAllowed) {
  absl::StatusOr<KubeConfig> config =
      ParseKubeconfig(Kubeconfig("    insecure-skip-tls-verify: true", "    token: t"), "/k",
                      {.allow_insecure = true});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->insecure_skip_tls_verify);
}

TEST(InClusterTest, ReadsTheServiceAccountFromItsRoot) {
  TempDir dir;
  dir.Write("ca.crt", "CA");
  dir.Write("token", "tok\n");
  dir.Write("namespace", "holdfast-system\n");
  absl::StatusOr<KubeConfig> config =
      LoadInCluster({.root = dir.path(), .host = "10.96.0.1", .port = "443"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->token_file, dir.path() + "/token");
  EXPECT_EQ(config->ns, "holdfast-system");

  absl::StatusOr<KubeConfig> v6 =
      LoadInCluster({.root = dir.path(), .host = "fd00::1", .port = "443"});
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
}

TEST(InClusterTest, OutsideAPodSaysWhy) {
  TempDir dir;
  absl::StatusOr<KubeConfig> config = LoadInCluster({.root = dir.path()});
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(absl::StrContains(config.status().message(), "KUBERNETES_SERVICE_HOST"));
  config = LoadInCluster({.root = dir.path(), .host = "10.96.0.1", .port = "443"});
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(absl::StrContains(config.status().message(), "ca.crt"));
}

TEST(BearerTokenTest, RotatedFileIsReadAtTheNextCheck) {
  TempDir dir;
  std::string path = dir.Write("token", "first\n");
  SimulatedClock clock;
  KubeConfig config;
  config.token_file = path;
  BearerToken token(config, clock, absl::Minutes(1));
  EXPECT_EQ(*token.Current(), "first");

  // The kubelet replaces the file (a new inode, another size).
  dir.Write("token.new", "second-token\n");
  std::filesystem::rename(path + ".new", path);
  clock.Advance(absl::Seconds(30));
  EXPECT_EQ(*token.Current(), "first") << "checked at most once a minute";
  clock.Advance(absl::Seconds(31));
  EXPECT_EQ(*token.Current(), "second-token");

  // After a 401 the file is checked at once.
  dir.Write("token", "third-token-x\n");
  token.Invalidate();
  EXPECT_EQ(*token.Current(), "third-token-x");

  // A file that disappears keeps the last token.
  std::filesystem::remove(path);
  clock.Advance(absl::Minutes(2));
  EXPECT_EQ(*token.Current(), "third-token-x");
}

TEST(BearerTokenTest, InlineTokenNeverChanges) {
  SimulatedClock clock;
  KubeConfig config;
  config.token = "inline";
  BearerToken token(config, clock);
  EXPECT_EQ(*token.Current(), "inline");
}

}  // namespace
}  // namespace holdfast
