#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace holdfast {

// What directory_bench and etcd_source_bench share.

// Their size, from --services, --routes, --upstreams and --changes.
struct SourceBenchSize {
  int services = 10000;
  int routes = 10;
  int upstreams = 5000;
  int changes = 50;
};
SourceBenchSize ParseSourceBenchSize(int argc, char** argv);

double Seconds(std::chrono::steady_clock::duration d);
double Percentile(std::vector<double> values, double fraction);

// The YAML of the objects the benchmarks read from files and stores:
// upstream-I (two hosts), and service-I with `routes` routes over
// `upstreams` upstreams, in the same shape as translate_bench's services
// (every third route matches a header, every other one splits between two
// upstreams); `generation` changes the route prefixes.
std::string GatewayYaml();
std::string UpstreamYaml(int i);
std::string ServiceYaml(int i, int routes, int upstreams, int generation);

}  // namespace holdfast
