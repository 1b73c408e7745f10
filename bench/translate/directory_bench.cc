// The server's path for a change in a config directory, at scale: N virtual
// services with R routes each (one file each, as a repository with a file
// per service has them), U upstreams (100 to a file) and one gateway, read
// by a DirectoryConfigSource. Each change rewrites one service's file; the
// source reads the directory again (Reload), decodes what changed,
// assembles the translation input and publishes through its pipeline.
// translate_bench measures the translation alone, from objects in memory;
// this measures what a file edit costs before the proxies hear of it.
//
//   directory_bench [--services 10000] [--routes 10] [--upstreams 5000] [--changes 50]
//
// Prints one markdown table row per figure. The directory is made under
// $TMPDIR and removed at the end.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/translate/source_bench.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/source/directory_config_source.h"
#include "src/source/directory_scanner.h"

namespace holdfast {
namespace {

using Steady = std::chrono::steady_clock;

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

void WriteConfig(const std::filesystem::path& dir, int services, int routes, int upstreams) {
  WriteFile(dir / "gateway.yaml", GatewayYaml());
  std::filesystem::create_directories(dir / "upstreams");
  for (int first = 0; first < upstreams; first += 100) {
    std::string yaml;
    for (int i = first; i < std::min(upstreams, first + 100); ++i) yaml += UpstreamYaml(i);
    WriteFile(dir / "upstreams" / absl::StrCat("upstreams-", first / 100, ".yaml"), yaml);
  }
  std::filesystem::create_directories(dir / "services");
  for (int i = 0; i < services; ++i) {
    WriteFile(dir / "services" / absl::StrCat("service-", i, ".yaml"),
              ServiceYaml(i, routes, upstreams, 0));
  }
}

int Run(const SourceBenchSize& size) {
  const int services = size.services, routes = size.routes, upstreams = size.upstreams;
  const int changes = size.changes;
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(tmp != nullptr ? tmp : "/tmp") /
      absl::StrCat("directory_bench.", getpid());
  std::filesystem::create_directories(dir);
  WriteConfig(dir, services, routes, upstreams);

  MetricsRegistry metrics;
  Steady::time_point published;
  size_t resources = 0;
  DirectoryConfigSource source({.directory = dir.string()}, Clock::Real(), &metrics,
                               [&](SnapshotPtr snapshot) {
                                 published = Steady::now();
                                 resources = snapshot->size();
                               });
  const auto start = Steady::now();
  if (absl::Status first = source.Reload(); !first.ok()) {
    std::fprintf(stderr, "first read: %s\n", std::string(first.message()).c_str());
    return 1;
  }
  const double first_read = Seconds(Steady::now() - start);

  std::vector<double> scan, reload, until_published;
  for (int c = 1; c <= changes; ++c) {
    const int i = c * 7 % services;
    WriteFile(dir / "services" / absl::StrCat("service-", i, ".yaml"),
              ServiceYaml(i, routes, upstreams, c));
    auto t0 = Steady::now();
    absl::StatusOr<DirectoryListing> listing = ScanDirectory(dir.string(), {".yaml"});
    auto t1 = Steady::now();
    published = {};
    absl::Status reloaded = source.Reload();
    auto t2 = Steady::now();
    if (!listing.ok() || !reloaded.ok() || published == Steady::time_point()) {
      std::fprintf(stderr, "change %d: %s\n", c, std::string(reloaded.message()).c_str());
      return 1;
    }
    scan.push_back(Seconds(t1 - t0));
    reload.push_back(Seconds(t2 - t1));
    until_published.push_back(Seconds(published - t1));
  }
  std::filesystem::remove_all(dir);

  std::printf("| figure | value |\n|---|---|\n");
  std::printf("| files | %d services (one file each), %d upstreams (100 to a file), 1 gateway |\n",
              services, upstreams);
  std::printf("| Envoy resources | %zu |\n", resources);
  std::printf("| first read, decode, translation and publication | %.3f s |\n", first_read);
  std::printf(
      "| one service file rewritten: Reload (list, read, translate, publish) (median of %zu) "
      "| %.4f s |\n",
      reload.size(), Percentile(reload, 0.5));
  std::printf("| same, p99 | %.4f s |\n", Percentile(reload, 0.99));
  std::printf("| of which until published (median) | %.4f s |\n", Percentile(until_published, 0.5));
  std::printf("| listing the directory alone (median) | %.4f s |\n", Percentile(scan, 0.5));
  return 0;
}

}  // namespace
}  // namespace holdfast

int main(int argc, char** argv) {
  return holdfast::Run(holdfast::ParseSourceBenchSize(argc, argv));
}
