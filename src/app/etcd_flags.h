#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/etcd/etcd_client.h"

namespace CLI {
class App;
}

namespace holdfast {

// How to reach etcd; the same flags for serve, apply, get and delete.
struct EtcdFlags {
  std::vector<std::string> endpoints;
  std::string prefix = "/holdfast";
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string username;  // the password comes from $HOLDFAST_ETCD_PASSWORD
  std::string call_timeout = "5s";

  bool enabled() const { return !endpoints.empty(); }
};

// Adds --etcd-* flags to `command`; `required` makes --etcd-endpoints so.
void AddEtcdFlags(CLI::App* command, EtcdFlags* flags, bool required);

// A client for `flags` (prefix checked: it starts with '/' and does not end
// with one).
absl::StatusOr<std::unique_ptr<EtcdClient>> ConnectEtcd(const EtcdFlags& flags);

// Parses "15s", "500ms", "2m" (Go-style durations), naming `flag` on error.
absl::StatusOr<absl::Duration> ParseFlagDuration(const std::string& flag, const std::string& text);

}  // namespace holdfast
