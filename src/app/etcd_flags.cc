#include "src/app/etcd_flags.h"

#include <cstdlib>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace holdfast {

void AddEtcdFlags(CLI::App* command, EtcdFlags* flags, bool required) {
  CLI::Option* endpoints =
      command
          ->add_option("--etcd-endpoints", flags->endpoints,
                       "etcd endpoints, HOST:PORT or http(s)://HOST:PORT, comma-separated")
          ->delimiter(',');
  if (required) endpoints->required();
  command->add_option("--etcd-prefix", flags->prefix, "Key prefix of holdfast's keys in etcd")
      ->capture_default_str();
  command->add_option("--etcd-ca-file", flags->ca_file, "PEM CA bundle that signed etcd's certificate");
  command->add_option("--etcd-cert-file", flags->cert_file, "PEM client certificate for etcd");
  command->add_option("--etcd-key-file", flags->key_file, "PEM private key of --etcd-cert-file");
  command->add_option("--etcd-username", flags->username,
                      "etcd user (password from $HOLDFAST_ETCD_PASSWORD)");
  command->add_option("--etcd-call-timeout", flags->call_timeout, "Deadline of each etcd call")
      ->capture_default_str();
}

absl::StatusOr<absl::Duration> ParseFlagDuration(const std::string& flag, const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " \"", text, "\": expected a positive duration such as 15s or 500ms"));
  }
  return d;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> ConnectEtcd(const EtcdFlags& flags) {
  if (!absl::StartsWith(flags.prefix, "/") || absl::EndsWith(flags.prefix, "/")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--etcd-prefix \"", flags.prefix, "\": must start with '/' and not end with one"));
  }
  absl::StatusOr<absl::Duration> timeout = ParseFlagDuration("--etcd-call-timeout", flags.call_timeout);
  if (!timeout.ok()) return timeout.status();
  EtcdClientOptions options;
  options.endpoints = flags.endpoints;
  options.ca_file = flags.ca_file;
  options.cert_file = flags.cert_file;
  options.key_file = flags.key_file;
  options.username = flags.username;
  if (const char* password = std::getenv("HOLDFAST_ETCD_PASSWORD")) options.password = password;
  options.call_timeout = *timeout;
  return EtcdClient::Create(std::move(options));
}

}  // namespace holdfast
