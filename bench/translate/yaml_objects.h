#pragma once

#include <string>

namespace holdfast {

// The YAML of the objects the benchmarks read from files and stores:
// upstream-I (two hosts), and service-I with `routes` routes over
// `upstreams` upstreams, in the same shape as translate_bench's services
// (every third route matches a header, every other one splits between two
// upstreams); `generation` changes the route prefixes.
std::string GatewayYaml();
std::string UpstreamYaml(int i);
std::string ServiceYaml(int i, int routes, int upstreams, int generation);

}  // namespace holdfast
