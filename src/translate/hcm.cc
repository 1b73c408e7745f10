#include "src/translate/hcm.h"

#include <algorithm>

#include "envoy/extensions/filters/http/cors/v3/cors.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"

namespace holdfast {

using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

HttpConnectionManager MakeHcm(const std::string& stat_prefix, const std::string& route_config,
                              bool cors) {
  HttpConnectionManager hcm;
  hcm.set_stat_prefix(stat_prefix);
  auto* rds = hcm.mutable_rds();
  rds->set_route_config_name(route_config);
  rds->mutable_config_source()->mutable_ads();
  rds->mutable_config_source()->set_resource_api_version(envoy::config::core::v3::V3);
  if (cors) {
    auto* filter = hcm.add_http_filters();
    filter->set_name("envoy.filters.http.cors");
    filter->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::cors::v3::Cors());
  }
  auto* router = hcm.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  return hcm;
}

std::string StatPrefix(const std::string& name) {
  std::string out = name;
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

}  // namespace holdfast
