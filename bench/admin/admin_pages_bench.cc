// What the status page's and the CLI's data cost a replica as the fleet
// grows (issue: operator experience, "stays fast with 10,000 proxies"):
// N connected proxies (ADS, four types each, 1% NACKing one type, all
// holding one shared snapshot of a gateway: 1 listener, 1 route config,
// 50 clusters and their endpoints), then the thread CPU of building each
// page once (median of 15): /debug/fleet (what the page polls every 2 s),
// /debug/proxies (every stream in full, for the CLI), CSDS as JSON about one
// node, and CSDS about every node as the gRPC service encodes it (its size,
// and whether the 64 MiB bound refuses it), and a staged rollout's check
// of its canaries (1% of the proxies). Prints one markdown row per N.
//
//   admin_pages_bench [N ...]   (default: 1000 10000)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/admin/admin_server.h"
#include "src/rollout/canary_report.h"
#include "src/xds/client_status.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

double CpuMillis() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

SnapshotPtr Gateway() {
  std::vector<ResourcePtr> resources = {testing::ApiListener("l", "r"),
                                        testing::RouteConfig("r", "c0")};
  for (int i = 0; i < 50; ++i) {
    resources.push_back(testing::EdsCluster(absl::StrCat("c", i)));
    resources.push_back(testing::Endpoints(absl::StrCat("c", i), 8080));
  }
  return testing::Build(std::move(resources));
}

template <typename F>
double MedianMillis(F build) {
  std::vector<double> runs;
  for (int i = 0; i < 15; ++i) {
    const double start = CpuMillis();
    std::string body = build();
    runs.push_back(CpuMillis() - start);
    if (body.empty()) std::abort();
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

void Row(int n, const SnapshotPtr& snapshot) {
  ProxyRegistry registry;
  std::vector<std::shared_ptr<ProxyState>> keep;
  const std::string types[] = {
      std::string(type_url::kListener), std::string(type_url::kRouteConfiguration),
      std::string(type_url::kCluster), std::string(type_url::kClusterLoadAssignment)};
  for (int i = 0; i < n; ++i) {
    auto proxy = std::make_shared<ProxyState>(i + 1, "ads-sotw", "peer", absl::UnixEpoch());
    envoy::config::core::v3::Node node;
    node.set_id(absl::StrCat("proxy-", i));
    proxy->SetNode(node, "default");
    for (const std::string& type : types) {
      HeldView view{snapshot, Selection{.wildcard = true}};
      proxy->RecordSent(type, "v1", view, absl::UnixEpoch());
      proxy->RecordAck(type, "v1", view, absl::UnixEpoch());
    }
    if (i % 100 == 0) {
      proxy->RecordSent(types[2], "v2", {snapshot, Selection{.wildcard = true}}, absl::UnixEpoch());
      proxy->RecordNack(types[2], NackRecord{.version = "v2", .error = "lb_policy unsupported"});
    }
    if (i % 100 == 1) proxy->SetCanary();  // 1% canaries, as a staged rollout would pick
    registry.Add(proxy, i + 1);
    keep.push_back(std::move(proxy));
  }
  // A staged rollout's check (four times a second): the canaries' report
  // against a candidate.
  const double rollout_check = MedianMillis([&] {
    CanaryReport report = ReportCanaries(registry.Canaries(), snapshot);
    return std::to_string(report.acked);
  });
  const double fleet = MedianMillis([&] { return FleetToJson(registry.List(), 100).dump(); });
  const double proxies = MedianMillis([&] { return ProxiesToJson(registry.List()).dump(); });
  const double one =
      MedianMillis([&] { return ClientStatusToJson(registry.List(), "proxy-7")->dump(); });
  // The whole fleet with every resource, the size bound lifted to see what
  // it would cost, and whether the bound refuses it.
  auto whole = [&] {
    return AnswerClientStatus({}, registry.List(), std::numeric_limits<size_t>::max());
  };
  const double grpc = MedianMillis([&] { return whole()->SerializeAsString(); });
  const size_t grpc_bytes = whole()->ByteSizeLong();
  const bool refused = !AnswerClientStatus({}, registry.List()).ok();
  std::printf("| %d | %.1f ms | %.1f ms | %.1f ms | %.0f ms, %.0f MB, %s | %.2f ms |\n", n, fleet,
              proxies, one, grpc, grpc_bytes / 1e6, refused ? "refused" : "answered",
              rollout_check);
}

}  // namespace
}  // namespace holdfast

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 10000};
  const holdfast::SnapshotPtr snapshot = holdfast::Gateway();
  std::printf(
      "| proxies | /debug/fleet | /debug/proxies | /debug/client_status, one node | "
      "CSDS, every node with contents (by default) | rollout check, 1%% canaries |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int n : sizes) holdfast::Row(n, snapshot);
  return 0;
}
