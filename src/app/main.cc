// holdfast: an Envoy control plane. Commands are wired here; the work is in
// src/app/*.cc.
#include "CLI/CLI.hpp"
#include "src/app/serve.h"
#include "src/app/validate.h"
#include "src/common/log.h"

int main(int argc, char** argv) {
  CLI::App app{"holdfast: a highly available Envoy control plane"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log debug messages");

  holdfast::ServeOptions serve;
  CLI::App* serve_cmd = app.add_subcommand("serve", "Serve xDS to Envoy proxies and gRPC clients");
  serve_cmd->add_option("--config-dir", serve.config_dir,
                        "Directory of gateway objects (YAML): Gateway, VirtualService, "
                        "RouteTable, Upstream, Secret")
      ->check(CLI::ExistingDirectory);
  serve_cmd->add_option("--missing-upstream-status", serve.missing_upstream_status,
                        "Status code answered by routes whose upstream does not exist")
      ->capture_default_str()
      ->check(CLI::Range(200, 599));
  serve_cmd->add_option("--xds-dir", serve.xds_dir,
                        "Directory of raw Envoy resources (YAML/JSON, file-subscription format)")
      ->check(CLI::ExistingDirectory);
  serve_cmd->add_option("--xds-listen", serve.xds_listen, "xDS gRPC address, HOST:PORT (0: any free port)")
      ->capture_default_str();
  serve_cmd->add_option("--admin-listen", serve.admin_listen, "Admin HTTP address, HOST:PORT")
      ->capture_default_str();
  serve_cmd->add_option("--tls-cert", serve.tls.cert_file, "PEM certificate for TLS on the xDS port");
  serve_cmd->add_option("--tls-key", serve.tls.key_file, "PEM private key for --tls-cert");
  serve_cmd->add_option("--tls-client-ca", serve.tls.client_ca_file,
                        "PEM CA bundle: require client certificates signed by it (mutual TLS)");
  serve_cmd->add_option("--node-group", serve.node_group,
                        "Snapshot group of a node: none, cluster, or metadata:KEY")
      ->capture_default_str();
  serve_cmd->add_option("--control-plane-id", serve.control_plane_id,
                        "Identifier sent in every response's control_plane field")
      ->capture_default_str();
  serve_cmd->add_option("--ports-file", serve.ports_file,
                        "Write {\"xds\":PORT,\"admin\":PORT} here once listening");

  holdfast::ValidateOptions validate;
  CLI::App* validate_cmd = app.add_subcommand(
      "validate", "Check configuration files as serve would; exit 1 if any object is Rejected");
  validate_cmd->add_option("paths", validate.paths, "Files or directories of gateway objects")
      ->required()
      ->check(CLI::ExistingPath);
  validate_cmd->add_option("-o,--output", validate.output,
                           "statuses (default), json, or resources (the Envoy resources to serve)")
      ->check(CLI::IsMember({"statuses", "json", "resources"}));

  CLI11_PARSE(app, argc, argv);
  if (verbose) holdfast::SetMinLogLevel(holdfast::LogLevel::kDebug);
  if (serve_cmd->parsed()) return holdfast::RunServe(serve);
  if (validate_cmd->parsed()) return holdfast::RunValidate(validate);
  return 0;
}
