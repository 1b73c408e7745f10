// The raw-xDS directory source under endpoint churn, without serving: the
// fleet benchmark's configuration (C EDS clusters in clusters.json, one
// endpoints/<cluster>.json each) is written to a temporary directory, then
// each change rewrites a fraction of the endpoint files the way the fleet
// benchmark does (write a temporary file, rename it over) and the source
// reloads. Times the listing, and the whole reload (listing, reading and
// parsing changed files, checking references, building the snapshot), as
// thread CPU time so a busy machine moves it less than wall time. Prints
// one markdown table row per figure.
//
//   xds_directory_bench [--clusters 1000] [--endpoints 3] [--fraction 0.1] [--changes 100]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/common/clock.h"
#include "src/common/log.h"
#include "src/common/metrics.h"
#include "src/source/directory_scanner.h"
#include "src/source/xds_directory.h"

namespace holdfast {
namespace {

namespace fs = std::filesystem;

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string ClusterName(int i) { return absl::StrCat("cluster-", i); }

std::string ClustersFile(int clusters) {
  std::string out = "{\"resources\": [\n";
  for (int i = 0; i < clusters; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",\n",
                    "{\"@type\": \"type.googleapis.com/envoy.config.cluster.v3.Cluster\", "
                    "\"name\": \"",
                    ClusterName(i),
                    "\", \"type\": \"EDS\", \"connect_timeout\": \"1s\", "
                    "\"lb_policy\": \"ROUND_ROBIN\", \"eds_cluster_config\": "
                    "{\"eds_config\": {\"ads\": {}, \"resource_api_version\": \"V3\"}}}");
  }
  return out + "\n]}\n";
}

// Cluster i's endpoints at generation `gen`: the ports move with it.
std::string EndpointFile(int i, int endpoints, int gen) {
  std::string lb;
  for (int k = 0; k < endpoints; ++k) {
    const int port = 1024 + ((i * endpoints + k) * 7 + gen * 13) % 64000;
    absl::StrAppend(&lb, k == 0 ? "" : ", ",
                    "{\"endpoint\": {\"address\": {\"socket_address\": "
                    "{\"address\": \"127.0.0.1\", \"port_value\": ",
                    port, "}}}}");
  }
  return absl::StrCat(
      "{\"resources\": [{\"@type\": "
      "\"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment\", "
      "\"cluster_name\": \"",
      ClusterName(i),
      "\", \"endpoints\": [{\"locality\": {\"region\": \"bench\", \"zone\": \"zone-a\", "
      "\"sub_zone\": \"g",
      gen, "\"}, \"load_balancing_weight\": 1, \"lb_endpoints\": [", lb, "]}]}]}\n");
}

void WriteAtomically(const fs::path& path, const std::string& contents) {
  const fs::path temporary = path.string() + ".tmp";
  std::ofstream(temporary) << contents;
  fs::rename(temporary, path);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Run(int clusters, int endpoints, double fraction, int changes) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("xds_directory_bench.", getpid());
  fs::create_directories(dir / "endpoints");
  WriteAtomically(dir / "clusters.json", ClustersFile(clusters));
  for (int i = 0; i < clusters; ++i) {
    WriteAtomically(dir / "endpoints" / (ClusterName(i) + ".json"), EndpointFile(i, endpoints, 0));
  }
  MetricsRegistry metrics;
  int published = 0;
  XdsDirectorySource source({.directory = dir.string()}, Clock::Real(), &metrics,
                            [&](SnapshotPtr) { ++published; });
  if (absl::Status status = source.Reload(); !status.ok()) {
    std::fprintf(stderr, "first reload: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  const int per_change = std::max(1, static_cast<int>(clusters * fraction + 0.5));
  std::vector<double> listing, reload;
  for (int gen = 1; gen <= changes; ++gen) {
    const int start = (gen - 1) * per_change % clusters;
    for (int k = 0; k < per_change; ++k) {
      const int i = (start + k) % clusters;
      WriteAtomically(dir / "endpoints" / (ClusterName(i) + ".json"),
                      EndpointFile(i, endpoints, gen));
    }
    double t0 = ThreadCpuSeconds();
    (void)ScanDirectory(dir.string(), {".yaml", ".yml", ".json"});
    double t1 = ThreadCpuSeconds();
    (void)source.Reload();
    double t2 = ThreadCpuSeconds();
    listing.push_back(t1 - t0);
    reload.push_back(t2 - t1);
  }
  fs::remove_all(dir);
  if (published != changes + 1 || !source.rejections().empty()) {
    std::fprintf(stderr, "published %d snapshots for %d changes, %zu rejections\n", published,
                 changes, source.rejections().size());
    return 1;
  }
  const std::string what =
      absl::StrCat(per_change, " of ", clusters, " endpoint files changed (", endpoints,
                   " endpoints each), ", changes, " changes");
  std::printf("| %s: listing, median CPU | ms | %.3f |\n", what.c_str(), 1e3 * Median(listing));
  std::printf("| %s: reload, median CPU | ms | %.3f |\n", what.c_str(), 1e3 * Median(reload));
  std::sort(reload.begin(), reload.end());
  std::printf("| %s: reload, p90 CPU | ms | %.3f |\n", what.c_str(),
              1e3 * reload[reload.size() * 9 / 10]);
  return 0;
}

}  // namespace
}  // namespace holdfast

int main(int argc, char** argv) {
  int clusters = 1000, endpoints = 3, changes = 100;
  double fraction = 0.1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--clusters") clusters = std::atoi(argv[i + 1]);
    else if (flag == "--endpoints") endpoints = std::atoi(argv[i + 1]);
    else if (flag == "--fraction") fraction = std::atof(argv[i + 1]);
    else if (flag == "--changes") changes = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  holdfast::SetMinLogLevel(holdfast::LogLevel::kWarning);
  return holdfast::Run(clusters, endpoints, fraction, std::max(1, changes));
}
