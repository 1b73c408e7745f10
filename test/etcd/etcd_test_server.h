#pragma once
// A real etcd server for tests: /usr/bin/etcd (Debian etcd-server) on free
// loopback ports, in a temporary directory, killed when the object goes.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/etcd/etcd_client.h"

namespace holdfast::testing {

inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

class EtcdTestServer {
 public:
  struct Options {
    // Serve clients over TLS and require client certificates signed by the
    // same test CA (files: ca_file(), client_cert_file(), client_key_file()).
    bool mutual_tls = false;
  };

  EtcdTestServer() : EtcdTestServer(Options{}) {}
  explicit EtcdTestServer(Options options) : options_(options) {
    char dir_template[] = "/tmp/holdfast-etcd-XXXXXX";
    dir_ = mkdtemp(dir_template);
    client_port_ = FreeLoopbackPort();
    peer_port_ = FreeLoopbackPort();
    if (options_.mutual_tls) MakeCertificates();
    Start();
  }

  std::string ca_file() const { return dir_ + "/ca.crt"; }
  std::string client_cert_file() const { return dir_ + "/client.crt"; }
  std::string client_key_file() const { return dir_ + "/client.key"; }
  ~EtcdTestServer() {
    Kill();
    std::filesystem::remove_all(dir_);
  }

  std::string endpoint() const { return absl::StrCat("127.0.0.1:", client_port_); }

  // Starts etcd (again, on the same ports and data) and waits until it answers.
  void Start() {
    std::string client_url =
        absl::StrCat(options_.mutual_tls ? "https" : "http", "://127.0.0.1:", client_port_);
    std::string server_cert = dir_ + "/server.crt", server_key = dir_ + "/server.key",
                ca = ca_file();
    std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port_);
    std::string log = dir_ + "/etcd.log";
    pid_ = fork();
    if (pid_ == 0) {
      FILE* out = freopen(log.c_str(), "a", stderr);
      (void)out;
      dup2(2, 1);
      std::string cluster = "default=" + peer_url;
      std::string data = dir_ + "/data";
      if (options_.mutual_tls) {
        execl("/usr/bin/etcd", "etcd", "--name", "default", "--data-dir", data.c_str(),
              "--listen-client-urls", client_url.c_str(), "--advertise-client-urls",
              client_url.c_str(), "--listen-peer-urls", peer_url.c_str(),
              "--initial-advertise-peer-urls", peer_url.c_str(), "--initial-cluster",
              cluster.c_str(), "--log-level", "warn", "--cert-file", server_cert.c_str(),
              "--key-file", server_key.c_str(), "--trusted-ca-file", ca.c_str(),
              "--client-cert-auth", static_cast<char*>(nullptr));
      }
      execl("/usr/bin/etcd", "etcd", "--name", "default", "--data-dir", data.c_str(),
            "--listen-client-urls", client_url.c_str(), "--advertise-client-urls",
            client_url.c_str(), "--listen-peer-urls", peer_url.c_str(),
            "--initial-advertise-peer-urls", peer_url.c_str(), "--initial-cluster", cluster.c_str(),
            "--log-level", "warn", static_cast<char*>(nullptr));
      _exit(127);
    }
    // Probe with plain TCP first: a gRPC channel that saw "connection
    // refused" waits out its reconnect backoff before trying again.
    for (int i = 0; i < 200 && !Listening(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    auto client = Client(absl::Seconds(1));
    for (int i = 0; i < 100; ++i) {
      if (client->Get("/ready").ok()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "etcd did not start; see " << log;
  }

  bool Listening() const {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(client_port_);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    return ok;
  }

  // SIGSTOP / SIGCONT: the member keeps its connections open and answers
  // nothing, like one behind a blackhole.
  void Pause() { kill(pid_, SIGSTOP); }
  void Resume() { kill(pid_, SIGCONT); }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::unique_ptr<EtcdClient> Client(absl::Duration timeout = absl::Seconds(2)) const {
    EtcdClientOptions options;
    options.endpoints = {endpoint()};
    options.call_timeout = timeout;
    if (options_.mutual_tls) {
      options.ca_file = ca_file();
      options.cert_file = client_cert_file();
      options.key_file = client_key_file();
    }
    return std::move(EtcdClient::Create(options)).value();
  }

 private:
  // A test CA, a server certificate for 127.0.0.1 and a client certificate.
  void MakeCertificates() {
    std::string script = absl::StrCat(
        "set -e; cd ", dir_, "; exec >certs.log 2>&1; ",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out "
        "ca.crt; ",
        "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > "
        "ext.cnf; ",
        "for who in server client; do ",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=\\$who -keyout \\$who.key -out \\$who.csr; ",
        "openssl x509 -req -in \\$who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 ",
        "-extfile ext.cnf -out \\$who.crt; done");
    ASSERT_EQ(std::system(("bash -c \"" + script + "\"").c_str()), 0)
        << "see " << dir_ << "/certs.log";
  }

  Options options_;
  std::string dir_;
  int client_port_ = 0;
  int peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace holdfast::testing
