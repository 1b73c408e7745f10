// holdfast: an Envoy control plane. Commands are wired here; the work is in
// src/app/*.cc and src/cli/*.cc.
#include <functional>
#include <memory>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "src/app/diff_command.h"
#include "src/app/serve.h"
#include "src/app/store_commands.h"
#include "src/app/validate.h"
#include "src/cli/fleet_commands.h"
#include "src/common/log.h"

namespace {

// One subcommand: its flags write into options it owns; `run` is called
// when it is the command given.
struct Command {
  CLI::App* cli;
  std::function<int()> run;
};

template <typename Options>
Command Bind(CLI::App* cli, std::shared_ptr<Options> options, int (*run)(const Options&)) {
  return {cli, [options, run] { return run(*options); }};
}

// --admin and --admin-token-file of the commands that ask a running replica.
void AddAdminFlags(CLI::App* command, holdfast::AdminEndpoint* admin) {
  command->add_option("--admin", admin->url, "The replica's admin endpoint (URL or HOST:PORT)")
      ->capture_default_str();
  command->add_option("--admin-token-file", admin->token_file,
                      "Bearer token for an admin endpoint that requires one (serve's "
                      "--admin-token-file)");
}

// serve: where the configuration comes from and how it is translated.
void AddServeSourceFlags(CLI::App* cmd, holdfast::ServeOptions* serve) {
  cmd->add_option("--config-dir", serve->config_dir,
                  "Directory of gateway objects (YAML): Gateway, VirtualService, "
                  "RouteTable, Upstream, Secret")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--missing-upstream-status", serve->missing_upstream_status,
                  "Status code answered by routes whose upstream does not exist")
      ->capture_default_str()
      ->check(CLI::Range(200, 599));
  cmd->add_option("--xds-dir", serve->xds_dir,
                  "Directory of raw Envoy resources (YAML/JSON, file-subscription format)")
      ->check(CLI::ExistingDirectory);
  holdfast::AddEtcdFlags(cmd, &serve->etcd, /*required=*/false);
  holdfast::AddKubeFlags(cmd, &serve->kube);
  cmd->add_option("--state-dir", serve->state_dir,
                  "Directory for the last-known-good snapshot (empty: do not persist)")
      ->capture_default_str();
  cmd->add_option("--store-grace", serve->store_grace,
                  "At start, how long to wait for live config before serving the persisted "
                  "snapshot")
      ->capture_default_str();
}

// serve: the xDS port, its limits, TLS and who may ask for what.
void AddServeXdsFlags(CLI::App* cmd, holdfast::ServeOptions* serve) {
  cmd->add_option("--xds-listen", serve->xds_listen,
                  "xDS gRPC address, HOST:PORT (0: any free port)")
      ->capture_default_str();
  cmd->add_option("--xds-handshake-timeout", serve->xds_handshake_timeout,
                  "Close a connection that has not completed TLS and HTTP/2 set-up by then")
      ->capture_default_str();
  cmd->add_option("--xds-first-request-timeout", serve->xds_first_request_timeout,
                  "End a stream that has sent no request by then, and close a connection "
                  "idle (no stream) that long")
      ->capture_default_str();
  cmd->add_option("--xds-max-streams-per-connection", serve->xds_max_streams_per_connection,
                  "Streams one xDS connection may have open at once (HTTP/2 "
                  "SETTINGS_MAX_CONCURRENT_STREAMS)")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--xds-csds", serve->xds_csds,
                  "Answer ClientStatusDiscoveryService (CSDS) on the xDS port: every connected "
                  "proxy's resources and ACK/NACK status (refused while --xds-client-identity "
                  "is on)")
      ->capture_default_str();
  cmd->add_option("--tls-cert", serve->tls.cert_file, "PEM certificate for TLS on the xDS port");
  cmd->add_option("--tls-key", serve->tls.key_file, "PEM private key for --tls-cert");
  cmd->add_option("--tls-client-ca", serve->tls.client_ca_file,
                  "PEM CA bundle: require client certificates signed by it (mutual TLS)");
  cmd->add_option("--node-group", serve->node_group,
                  "Snapshot group of a node: none, cluster, metadata:KEY, identity or "
                  "spiffe-namespace (the last two from the client certificate)")
      ->capture_default_str();
  cmd->add_option("--xds-client-identity", serve->xds_client_identity,
                  "With mutual TLS, refuse a stream whose node.id is not its client "
                  "certificate's identity: none, common-name, san-dns, san-uri, spiffe or "
                  "spiffe:TRUST_DOMAIN")
      ->capture_default_str();
  cmd->add_option("--control-plane-id", serve->control_plane_id,
                  "Identifier sent in every response's control_plane field")
      ->capture_default_str();
  holdfast::AddRolloutFlags(cmd, &serve->rollout);
}

// serve: the admin endpoint, the admission webhook and the ports file.
void AddServeSideFlags(CLI::App* cmd, holdfast::ServeOptions* serve) {
  cmd->add_option("--admin-listen", serve->admin_listen,
                  "Admin HTTP address, HOST:PORT; other than loopback it needs "
                  "--admin-token-file")
      ->capture_default_str();
  cmd->add_option("--admin-token-file", serve->admin_auth.token_file,
                  "File holding the bearer token the admin endpoint requires (all pages "
                  "but /healthz and /readyz); re-read when it changes");
  cmd->add_option("--webhook-listen", serve->webhook_listen,
                  "Serve the validating admission webhook (HTTPS, POST /validate) here, "
                  "HOST:PORT; needs --webhook-cert and --webhook-key");
  cmd->add_option("--webhook-cert", serve->webhook_cert,
                  "PEM serving certificate (chain) of the webhook; re-read when it changes");
  cmd->add_option("--webhook-key", serve->webhook_key, "PEM private key of --webhook-cert");
  cmd->add_option("--ports-file", serve->ports_file,
                  "Write {\"xds\":PORT,\"admin\":PORT} here once listening");
}

// serve: leader election.
void AddServeElectionFlags(CLI::App* cmd, holdfast::ServeOptions* serve) {
  cmd->add_option("--replica-id", serve->replica_id,
                  "This replica's name in leader election and status writes (default: host "
                  "name)");
  cmd->add_option("--lease-duration", serve->lease_duration, "Leader lease")->capture_default_str();
  cmd->add_option("--renew-deadline", serve->renew_deadline,
                  "A leader that cannot renew within this stops leading")
      ->capture_default_str();
  cmd->add_option("--retry-period", serve->retry_period, "Lease renewal and campaign interval")
      ->capture_default_str();
  cmd->add_option("--lease-namespace", serve->lease_namespace,
                  "Kubernetes: the namespace of the election Lease (default: the pod's "
                  "namespace with --in-cluster, else holdfast-system)");
  cmd->add_option("--lease-name", serve->lease_name, "Kubernetes: the name of the election Lease")
      ->capture_default_str();
}

Command AddServeCommand(CLI::App& app) {
  auto serve = std::make_shared<holdfast::ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve xDS to Envoy proxies and gRPC clients");
  AddServeSourceFlags(cmd, serve.get());
  AddServeXdsFlags(cmd, serve.get());
  AddServeSideFlags(cmd, serve.get());
  AddServeElectionFlags(cmd, serve.get());
  return Bind(cmd, serve, &holdfast::RunServe);
}

Command AddValidateCommand(CLI::App& app) {
  auto validate = std::make_shared<holdfast::ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check configuration files as serve would; exit 1 if any object is Rejected");
  cmd->add_option("paths", validate->paths, "Files or directories of gateway objects")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("-o,--output", validate->output,
                  "statuses (default), json, or resources (the Envoy resources to serve)")
      ->check(CLI::IsMember({"statuses", "json", "resources"}));
  return Bind(cmd, validate, &holdfast::RunValidate);
}

// apply, get and delete: gateway objects in etcd.
std::vector<Command> AddStoreCommands(CLI::App& app) {
  auto apply = std::make_shared<holdfast::ApplyOptions>();
  CLI::App* apply_cmd = app.add_subcommand(
      "apply", "Validate gateway objects as serve would and write the valid ones to etcd");
  holdfast::AddEtcdFlags(apply_cmd, &apply->etcd, /*required=*/true);
  apply_cmd->add_option("-f,--filename", apply->files, "Files or directories of gateway objects")
      ->required()
      ->check(CLI::ExistingPath);
  apply_cmd->add_flag("--partial", apply->partial,
                      "Write the valid objects even if some are invalid (exit code still 1)");

  auto get = std::make_shared<holdfast::GetOptions>();
  CLI::App* get_cmd = app.add_subcommand("get", "List gateway objects in etcd with their statuses");
  holdfast::AddEtcdFlags(get_cmd, &get->etcd, /*required=*/true);
  get_cmd->add_option("kind", get->kind, "Only objects of this kind");
  get_cmd->add_option("-o,--output", get->output, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));

  auto del = std::make_shared<holdfast::DeleteOptions>();
  CLI::App* delete_cmd = app.add_subcommand("delete", "Remove a gateway object from etcd");
  holdfast::AddEtcdFlags(delete_cmd, &del->etcd, /*required=*/true);
  delete_cmd->add_option("kind", del->kind, "Kind, such as VirtualService")->required();
  delete_cmd->add_option("name", del->name, "NAMESPACE/NAME (or NAME in default)")->required();

  return {Bind(apply_cmd, apply, &holdfast::RunApply), Bind(get_cmd, get, &holdfast::RunGet),
          Bind(delete_cmd, del, &holdfast::RunDelete)};
}

// status, proxies and dump: asking a running replica about its fleet.
std::vector<Command> AddFleetCommands(CLI::App& app) {
  auto status = std::make_shared<holdfast::StatusOptions>();
  CLI::App* status_cmd = app.add_subcommand(
      "status",
      "One screen about a running replica: readiness, leader, store, snapshot, proxies by state, "
      "objects by status, and what needs attention (exit 1 if anything does, 2 if it cannot be "
      "asked)");
  AddAdminFlags(status_cmd, &status->admin);
  status_cmd->add_option("-o,--output", status->output, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));

  auto proxies = std::make_shared<holdfast::ProxiesOptions>();
  CLI::App* proxies_cmd = app.add_subcommand(
      "proxies",
      "The proxies connected to a running replica, NACKing and pending first; with "
      "NODE, that proxy in detail");
  AddAdminFlags(proxies_cmd, &proxies->admin);
  proxies_cmd->add_option("node", proxies->filter.node, "One node id");
  proxies_cmd->add_flag("--nacking", proxies->filter.nacking,
                        "Only proxies whose latest reply of some type is a NACK");
  proxies_cmd->add_flag("--stale", proxies->filter.stale,
                        "Only proxies not synced (a response awaits its ACK, or was NACKed)");
  proxies_cmd->add_option("-o,--output", proxies->output, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));

  auto dump = std::make_shared<holdfast::DumpOptions>();
  CLI::App* dump_cmd = app.add_subcommand(
      "dump",
      "The Envoy resources a proxy was sent (--node) or a group's snapshot, secrets "
      "redacted");
  AddAdminFlags(dump_cmd, &dump->admin);
  dump_cmd->add_option("--node", dump->node, "The proxy's node id");
  dump_cmd->add_option("--group", dump->group, "Without --node: this node group's snapshot")
      ->capture_default_str();
  dump_cmd->add_option("--type", dump->type,
                       "Only listener, route, cluster, endpoint or secret (or a type URL)");
  dump_cmd->add_option("-o,--output", dump->output, "yaml (default) or json")
      ->check(CLI::IsMember({"yaml", "json"}));

  return {Bind(status_cmd, status, &holdfast::RunStatus),
          Bind(proxies_cmd, proxies, &holdfast::RunProxies),
          Bind(dump_cmd, dump, &holdfast::RunDump)};
}

// diff and rollout: changing what a running replica serves.
std::vector<Command> AddChangeCommands(CLI::App& app) {
  auto diff = std::make_shared<holdfast::DiffOptions>();
  CLI::App* diff_cmd = app.add_subcommand(
      "diff",
      "What serving these gateway objects would change in a running replica's resources "
      "(exit 1 if anything)");
  AddAdminFlags(diff_cmd, &diff->admin);
  diff_cmd->add_option("paths", diff->paths, "Files or directories: the whole configuration")
      ->required()
      ->check(CLI::ExistingPath);
  diff_cmd->add_option("--group", diff->group, "The node group to compare")->capture_default_str();

  auto rollout = std::make_shared<holdfast::RolloutOptions>();
  CLI::App* rollout_cmd = app.add_subcommand(
      "rollout", "A running replica's staged rollout: status, or promote or abort it");
  AddAdminFlags(rollout_cmd, &rollout->admin);
  rollout_cmd->add_option("action", rollout->action, "status (default), promote or abort")
      ->check(CLI::IsMember({"status", "promote", "abort"}));
  rollout_cmd->add_option("-o,--output", rollout->output, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  rollout_cmd->add_option("--group", rollout->group,
                          "A node group with a rollout of its own (serve --rollout-group); "
                          "default: status of every rollout, promote or abort of the one for "
                          "every other group");

  return {Bind(diff_cmd, diff, &holdfast::RunDiff),
          Bind(rollout_cmd, rollout, &holdfast::RunRollout)};
}

std::vector<Command> AddCommands(CLI::App& app) {
  std::vector<Command> commands = {AddServeCommand(app), AddValidateCommand(app)};
  for (auto add : {&AddStoreCommands, &AddFleetCommands, &AddChangeCommands}) {
    std::vector<Command> more = add(app);
    commands.insert(commands.end(), more.begin(), more.end());
  }
  return commands;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef NDEBUG
  // absl checks every Mutex acquisition for lock-order cycles unless told
  // not to; in a release build that graph upkeep was ~3% of a push's CPU.
  // Debug and sanitizer builds (the tests) keep the check.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  CLI::App app{"holdfast: a highly available Envoy control plane"};
  app.require_subcommand(1);
  // -v and --log-format also after the command: holdfast serve --log-format json.
  app.fallthrough();
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log debug messages");
  std::string log_format = "text";
  app.add_option("--log-format", log_format,
                 "Log lines as text, or as JSON objects (time, level, msg) for log pipelines")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  const std::vector<Command> commands = AddCommands(app);

  CLI11_PARSE(app, argc, argv);
  if (verbose) holdfast::SetMinLogLevel(holdfast::LogLevel::kDebug);
  if (log_format == "json") holdfast::SetLogFormat(holdfast::LogFormat::kJson);
  for (const Command& command : commands) {
    if (command.cli->parsed()) return command.run();
  }
  return 0;
}
