#pragma once

#include <string>

#include "src/admin/admin_options.h"
#include "src/app/etcd_flags.h"
#include "src/app/kube_flags.h"
#include "src/app/rollout_flags.h"
#include "src/xds/xds_server.h"

namespace holdfast {

struct ServeOptions {
  std::string config_dir;  // gateway objects (the embedded default source)
  std::string xds_dir;     // raw Envoy resources to serve, instead of config_dir
  EtcdFlags etcd;          // gateway objects in etcd, instead of config_dir
  KubeFlags kube;          // gateway objects as Kubernetes custom resources, instead of config_dir
  std::string replica_id;  // default: the host name
  std::string lease_duration = "15s";
  std::string renew_deadline = "10s";
  std::string retry_period = "2s";
  // The Lease of election on Kubernetes; namespace default: the pod's with
  // --in-cluster, else holdfast-system.
  std::string lease_namespace;
  std::string lease_name = "holdfast-leader";
  // Where the last-known-good snapshot is kept ("" disables persistence),
  // and how long to wait for live config before serving it at start.
  std::string state_dir = "holdfast-state";
  std::string store_grace = "5s";
  uint32_t missing_upstream_status = 503;
  std::string xds_listen = "127.0.0.1:18000";
  std::string admin_listen = "127.0.0.1:19000";
  // The validating admission webhook (HTTPS), off unless an address is set.
  std::string webhook_listen;
  std::string webhook_cert;
  std::string webhook_key;
  AdminAuthOptions admin_auth;  // required when admin_listen is not loopback
  XdsTlsOptions tls;
  std::string xds_handshake_timeout = "20s";      // XdsServerOptions::handshake_timeout
  std::string xds_first_request_timeout = "30s";  // XdsServerOptions::first_request_timeout
  int xds_max_streams_per_connection = 100;       // XdsServerOptions::max_streams_per_connection
  bool xds_csds = true;                           // XdsServerOptions::csds
  std::string node_group = "none";                // see NodeGrouper::Parse
  std::string xds_client_identity = "none";       // see ClientIdentityPolicy::Parse
  std::string control_plane_id = "holdfast";
  RolloutFlags rollout;  // off unless canaries are chosen
  // When set, {"xds": PORT, "admin": PORT} is written here once listening.
  std::string ports_file;
};

// Runs the control plane until SIGINT or SIGTERM. Returns the exit code.
int RunServe(const ServeOptions& options);

}  // namespace holdfast
