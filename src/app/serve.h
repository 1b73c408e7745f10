#pragma once

#include <string>

#include "src/xds/xds_server.h"

namespace holdfast {

struct ServeOptions {
  std::string config_dir;  // gateway objects (the embedded default source)
  std::string xds_dir;     // raw Envoy resources to serve, instead of config_dir
  uint32_t missing_upstream_status = 503;
  std::string xds_listen = "127.0.0.1:18000";
  std::string admin_listen = "127.0.0.1:19000";
  XdsTlsOptions tls;
  std::string node_group = "none";  // see NodeGrouper::Parse
  std::string control_plane_id = "holdfast";
  // When set, {"xds": PORT, "admin": PORT} is written here once listening.
  std::string ports_file;
};

// Runs the control plane until SIGINT or SIGTERM. Returns the exit code.
int RunServe(const ServeOptions& options);

}  // namespace holdfast
