#pragma once

#include <string>

#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"

namespace holdfast {

// The HTTP connection manager of every listener holdfast makes: routes over
// RDS from the ADS stream, the CORS filter when a route needs it, and the
// router (which gRPC clients require, last).
envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager MakeHcm(
    const std::string& stat_prefix, const std::string& route_config, bool cors);

// A resource name as a stats prefix ('/' becomes '.').
std::string StatPrefix(const std::string& name);

}  // namespace holdfast
