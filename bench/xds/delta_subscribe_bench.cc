// What one delta request costs the server as a stream's subscription grows
// (issue: security, "delta CPU amplification"). A stream subscribes to N
// endpoint names (1,000 of them exist), then sends requests that each
// subscribe or unsubscribe one name (half of them answered with the
// resource); every request is answered as the
// server would (DeltaSession::OnRequest, then NextResponse until nothing is
// owed). Prints one markdown row per N with the CPU per request, and what a
// new snapshot then costs the stream (the deferred folding of its changes).
//
//   delta_subscribe_bench [--requests 2000]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/xds/delta_session.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;

double CpuMicros() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

SnapshotPtr Endpoints1000(int port) {
  std::vector<ResourcePtr> resources;
  for (int i = 0; i < 1000; ++i) {
    resources.push_back(testing::EdsCluster(absl::StrCat("c", i)));
    resources.push_back(testing::Endpoints(absl::StrCat("c", i), port));
  }
  return testing::Build(std::move(resources));
}

void Drain(DeltaSession& session) {
  while (session.NextResponse().has_value()) {
  }
}

struct Figures {
  double median_us, p99_us, max_us, snapshot_ms;
};

Figures Measure(int subscribed, int requests) {
  SimulatedClock clock;
  MetricsRegistry metrics;
  XdsStats stats(&metrics);
  ProxyState proxy(1, "ads-delta", "bench", absl::UnixEpoch());
  ViewCache views;
  // No request rate limit here: the point is the cost of each request.
  DeltaSession session("", clock, &proxy, &stats, &views,
                       StreamLimits{.max_names_per_type = 1'000'000});
  session.OnSnapshot(Endpoints1000(80));
  DeltaDiscoveryRequest first;
  first.set_type_url(std::string(type_url::kClusterLoadAssignment));
  for (int i = 0; i < subscribed; ++i) {
    first.add_resource_names_subscribe(i < 1000 ? absl::StrCat("c", i) : absl::StrCat("ghost", i));
  }
  if (!session.OnRequest(first).ok()) std::abort();
  Drain(session);

  std::vector<double> costs;
  for (int r = 0; r < requests; ++r) {
    DeltaDiscoveryRequest request;
    request.set_type_url(std::string(type_url::kClusterLoadAssignment));
    // Alternately: drop a name that exists, and subscribe it again (which
    // sends it); every fourth request adds a name that does not exist.
    if (r % 4 == 3) {
      request.add_resource_names_subscribe(absl::StrCat("extra", r));
    } else if (r % 2 == 0) {
      request.add_resource_names_unsubscribe(absl::StrCat("c", r % 1000));
    } else {
      request.add_resource_names_subscribe(absl::StrCat("c", (r - 1) % 1000));
    }
    const double start = CpuMicros();
    if (!session.OnRequest(request).ok()) std::abort();
    Drain(session);
    costs.push_back(CpuMicros() - start);
  }
  const double start = CpuMicros();
  session.OnSnapshot(Endpoints1000(81));
  Drain(session);
  const double snapshot_ms = (CpuMicros() - start) / 1e3;
  std::sort(costs.begin(), costs.end());
  return {costs[costs.size() / 2], costs[costs.size() * 99 / 100], costs.back(), snapshot_ms};
}

}  // namespace
}  // namespace holdfast

int main(int argc, char** argv) {
  int requests = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--requests") requests = std::atoi(argv[i + 1]);
  }
  std::printf(
      "| names subscribed | CPU per one-name request, median | p99 | max | next snapshot |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int subscribed : {1'000, 10'000, 100'000}) {
    holdfast::Figures f = holdfast::Measure(subscribed, requests);
    std::printf("| %d | %.1f µs | %.1f µs | %.1f µs | %.1f ms |\n", subscribed, f.median_us,
                f.p99_us, f.max_us, f.snapshot_ms);
  }
  return 0;
}
