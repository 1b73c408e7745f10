// The Gateway API at scale (issue: Kubernetes backend): N HTTPRoutes, each
// with its own hostname and R rules of two matches, attached to one Gateway
// whose HTTP listener serves them, with S Services behind them. Runs what
// the Kubernetes source runs on every change (KubeConfigSource::
// ApplyIfChanged): discover the Services from their EndpointSlices, read
// every Gateway API object from its JSON, convert to holdfast objects,
// translate, build the snapshot, settle the statuses. Measures each stage
// of the first run, resident memory, and the time to publish a change to
// one HTTPRoute, a Service, an endpoint and the Gateway.
// Prints one markdown table row per figure.
//
//   gateway_api_bench [--routes 10000] [--rules 5] [--services 5000] [--changes 10]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/gateway_api/convert.h"
#include "src/gateway_api/status.h"
#include "src/snapshot/snapshot.h"
#include "src/source/kube_gateway_api.h"
#include "src/source/kube_service_discovery.h"
#include "src/translate/translator.h"

namespace holdfast {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double RssMb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE) / 1e6;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

json Meta(const std::string& ns, const std::string& name, int generation) {
  static int64_t resource_version = 0;  // as the API server's: one count for every write
  json meta = {{"name", name},
               {"uid", absl::StrCat("uid-", ns, "-", name)},
               {"generation", generation},
               {"resourceVersion", absl::StrCat(++resource_version)},
               {"creationTimestamp", "2026-12-01T00:00:00Z"}};
  if (!ns.empty()) meta["namespace"] = ns;
  return meta;
}

std::shared_ptr<const KubeObject> Object(json object) { return MakeKubeObject(std::move(object)); }

json GatewayClass() {
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", "GatewayClass"},
          {"metadata", Meta("", "holdfast", 1)},
          {"spec", {{"controllerName", "holdfast.dev/gateway-controller"}}}};
}

json Gateway() {
  json listener = {{"name", "http"},
                   {"port", 80},
                   {"protocol", "HTTP"},
                   {"allowedRoutes", {{"namespaces", {{"from", "All"}}}}}};
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", "Gateway"},
          {"metadata", Meta("infra", "public", 1)},
          {"spec", {{"gatewayClassName", "holdfast"}, {"listeners", {listener}}}}};
}

// Routes and Services spread over namespaces (100 when the Services divide
// evenly): route i and the Services it uses live in namespace i % namespaces.
int Namespaces(int services) { return services % 100 == 0 ? 100 : 1; }

std::string Namespace(int i, int services) {
  return absl::StrCat("team-", i % Namespaces(services));
}

// The k-th Service of route i's namespace.
json BackendRef(int i, int k, int services, int weight) {
  const int n = Namespaces(services);
  const int service = k % (services / n) * n + i % n;
  return {{"name", absl::StrCat("svc-", service)}, {"port", 80}, {"weight", weight}};
}

// Rules alike in shape to translate_bench's routes: prefixes that carry the
// generation, a header match on every third, two weighted backends on every
// other, a request timeout and a header modifier.
json HttpRoute(int i, int rules, int services, int generation) {
  json out = json::array();
  for (int r = 0; r < rules; ++r) {
    json matches = json::array();
    for (int m = 0; m < 2; ++m) {
      json match = {{"path",
                     {{"type", "PathPrefix"},
                      {"value", absl::StrCat("/api/v", generation, "/r", r, "m", m)}}}};
      if (r % 3 == 0) match["headers"] = {{{"name", "x-canary"}, {"value", "1"}}};
      matches.push_back(match);
    }
    json backends = {BackendRef(i, i * rules + r, services, r % 2 == 0 ? 1 : 90)};
    if (r % 2 == 1) backends.push_back(BackendRef(i, i + r + 1, services, 10));
    out.push_back({{"matches", matches},
                   {"backendRefs", backends},
                   {"filters",
                    {{{"type", "RequestHeaderModifier"},
                      {"requestHeaderModifier",
                       {{"set", {{{"name", "x-route"}, {"value", absl::StrCat(i)}}}}}}}}},
                   {"timeouts", {{"request", "5s"}}}});
  }
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", "HTTPRoute"},
          {"metadata", Meta(Namespace(i, services), absl::StrCat("route-", i), generation)},
          {"spec",
           {{"parentRefs", {{{"name", "public"}, {"namespace", "infra"}}}},
            {"hostnames", {absl::StrCat("route-", i, ".example.com")}},
            {"rules", out}}}};
}

json ServiceJson(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", Meta(ns, name, 1)},
          {"spec", {{"ports", {{{"name", "http"}, {"port", 80}, {"protocol", "TCP"}}}}}}};
}

// One slice per Service, one ready endpoint.
json SliceJson(const std::string& ns, const std::string& service, int s) {
  json meta = Meta(ns, service + "-abcde", 1);
  meta["labels"] = {{"kubernetes.io/service-name", service}};
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata", meta},
          {"addressType", "IPv4"},
          {"ports", {{{"name", "http"}, {"port", 8080}, {"protocol", "TCP"}}}},
          {"endpoints",
           {{{"addresses", {absl::StrCat("192.0.2.", s % 250 + 1)}},
             {"conditions", {{"ready", true}}}}}}};
}

// What the API server holds, as the reflectors keep it.
struct Cluster {
  KubeObjectsByResource gateway_api;
  KubeObjects services;
  KubeObjects slices;

  void Put(KubeObjects& objects, json object) {
    auto kube = Object(std::move(object));
    objects[kube->ns + "/" + kube->name] = kube;
  }
  void AddService(const std::string& ns, const std::string& name, int s) {
    Put(services, ServiceJson(ns, name));
    Put(slices, SliceJson(ns, name, s));
  }
};

// What KubeConfigSource keeps from one change to the next.
struct Holdfast {
  ParsedRoutes routes;
  KubeServiceDiscovery discovery;
  gateway_api::ConversionCache cache;
  Translator translator;
  SnapshotPtr snapshot;  // held, as the server holds what it serves
};

struct Stages {
  double discover = 0, read = 0, convert = 0, translate = 0, snapshot = 0, statuses = 0;
  size_t services = 0, resources = 0, bytes = 0, problems = 0;
  double Total() const { return discover + read + convert + translate + snapshot + statuses; }
};

bool ByTotal(const Stages& a, const Stages& b) { return a.Total() < b.Total(); }

// One ApplyIfChanged: everything from the objects to the settled statuses.
Stages Publish(const Cluster& cluster, Holdfast& holdfast) {
  Stages s;
  auto t0 = Clock::now();
  TranslationInput input;
  input.services = holdfast.discovery.Discover(cluster.services, cluster.slices);
  s.services = input.services.size();
  auto t1 = Clock::now();
  gateway_api::GatewayApiInput api =
      GatewayApiInputOf(cluster.gateway_api, input.services, &holdfast.routes);
  auto t2 = Clock::now();
  gateway_api::Conversion conversion = gateway_api::ConvertGatewayApi(api, holdfast.cache);
  auto t3 = Clock::now();
  for (GatewayObject& o : conversion.objects) {
    ObjectKey key = o.key();
    input.objects[std::move(key)] = std::move(o);  // as KubeConfigSource does
  }
  TranslationOutput out = holdfast.translator.Translate(input);
  auto t4 = Clock::now();
  s.resources = out.resources.size();
  for (const auto& r : out.resources) s.bytes += r->serialized().size();
  auto snapshot =
      Snapshot::Build(std::move(out.resources), absl::Now(), {}, holdfast.snapshot.get());
  auto t5 = Clock::now();
  if (!snapshot.ok()) {
    std::fprintf(stderr, "snapshot: %s\n", std::string(snapshot.status().message()).c_str());
    std::exit(1);
  }
  holdfast.snapshot = *std::move(snapshot);
  gateway_api::GatewayApiStatuses settled = gateway_api::SettleStatuses(
      std::move(conversion.statuses), conversion.made_from, out.statuses);
  auto t6 = Clock::now();
  for (const auto& [key, status] : settled) s.problems += status->problems.size();
  s.discover = Seconds(t1 - t0);
  s.read = Seconds(t2 - t1);
  s.convert = Seconds(t3 - t2);
  s.translate = Seconds(t4 - t3);
  s.snapshot = Seconds(t5 - t4);
  s.statuses = Seconds(t6 - t5);
  return s;
}

const Stages& Median(std::vector<Stages>& runs) {
  std::sort(runs.begin(), runs.end(), ByTotal);
  return runs[runs.size() / 2];
}

void PrintChanges(const char* what, std::vector<Stages>& runs) {
  if (runs.empty()) return;
  const Stages& median = Median(runs);
  std::printf("| %s, whole publish (median of %zu) | %.3f s |\n", what, runs.size(),
              median.Total());
  std::printf("| same, max | %.3f s |\n", runs.back().Total());
  std::printf(
      "| that median: discover / read / convert / translate / build / statuses | "
      "%.3f / %.3f / %.3f / %.3f / %.3f / %.3f s |\n",
      median.discover, median.read, median.convert, median.translate, median.snapshot,
      median.statuses);
}

void PrintFirst(int routes, int rules, const Stages& first, double rss_added_mb) {
  std::printf("| figure | value |\n|---|---|\n");
  std::printf("| objects | %d HTTPRoutes x %d rules x 2 matches, %zu Services, 1 Gateway |\n",
              routes, rules, first.services);
  std::printf("| Envoy resources | %zu (%.1f MB serialized) |\n", first.resources,
              first.bytes / 1e6);
  std::printf("| discover Services from their EndpointSlices | %.3f s |\n", first.discover);
  std::printf("| read the Gateway API objects (JSON) | %.3f s |\n", first.read);
  std::printf("| convert to holdfast objects | %.3f s |\n", first.convert);
  std::printf("| translate | %.3f s |\n", first.translate);
  std::printf("| snapshot build | %.3f s |\n", first.snapshot);
  std::printf("| settle statuses | %.3f s |\n", first.statuses);
  std::printf("| first publish, total | %.3f s |\n", first.Total());
  std::printf("| resident memory added | %.0f MB |\n", rss_added_mb);
}

int Run(int routes, int rules, int services, int changes) {
  Cluster cluster;
  cluster.gateway_api["gatewayclasses"]["/holdfast"] = Object(GatewayClass());
  cluster.gateway_api["gateways"]["infra/public"] = Object(Gateway());
  for (int i = 0; i < routes; ++i) {
    cluster.Put(cluster.gateway_api["httproutes"], HttpRoute(i, rules, services, 0));
  }
  for (int s = 0; s < services; ++s) {
    cluster.AddService(Namespace(s, services), absl::StrCat("svc-", s), s);
  }

  const double rss_before = RssMb();
  Holdfast holdfast;
  const Stages first = Publish(cluster, holdfast);
  const double rss_after = RssMb();
  if (first.problems != 0) {
    std::fprintf(stderr, "%zu problems in the statuses: the input is not what was meant\n",
                 first.problems);
    return 1;
  }

  std::vector<Stages> route_changed;
  for (int c = 1; c <= changes; ++c) {
    cluster.Put(cluster.gateway_api["httproutes"], HttpRoute(c * 7 % routes, rules, services, c));
    route_changed.push_back(Publish(cluster, holdfast));
  }
  // Other events of a cluster: a Service no route names is created (a
  // deployment elsewhere); an endpoint of a Service moves (a pod
  // replaced); the Gateway is written again (a new resourceVersion, the
  // same listeners, as after holdfast writes its status).
  std::vector<Stages> service_added, endpoint_moved;
  for (int c = 1; c <= std::min(changes, 10); ++c) {
    cluster.AddService("team-0", absl::StrCat("added-", c), c);
    service_added.push_back(Publish(cluster, holdfast));
    const int s = c * 13 % services;
    cluster.Put(cluster.slices, SliceJson(Namespace(s, services), absl::StrCat("svc-", s), c + 7));
    endpoint_moved.push_back(Publish(cluster, holdfast));
  }
  cluster.gateway_api["gateways"]["infra/public"] = Object(Gateway());
  std::vector<Stages> gateway_written = {Publish(cluster, holdfast)};

  PrintFirst(routes, rules, first, rss_after - rss_before);
  PrintChanges("one HTTPRoute changed", route_changed);
  PrintChanges("a Service no route names added", service_added);
  PrintChanges("an endpoint of a Service moved", endpoint_moved);
  PrintChanges("the Gateway written again (same listeners)", gateway_written);
  return 0;
}

}  // namespace
}  // namespace holdfast

int main(int argc, char** argv) {
  int routes = 10000, rules = 5, services = 5000, changes = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--routes")
      routes = value;
    else if (flag == "--rules")
      rules = value;
    else if (flag == "--services")
      services = value;
    else if (flag == "--changes")
      changes = value;
  }
  if (routes <= 0 || rules <= 0 || services <= 0) {
    std::fprintf(stderr, "--routes, --rules and --services must be positive\n");
    return 2;
  }
  return holdfast::Run(routes, rules, services, changes);
}
