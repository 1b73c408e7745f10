// The Gateway API at scale (issue: Kubernetes backend): N HTTPRoutes, each
// with its own hostname and R rules of two matches, attached to one Gateway
// whose HTTP listener serves them, with S Services behind them. Runs what
// the Kubernetes source runs on every change (KubeConfigSource::
// ApplyIfChanged, Services already discovered): read every Gateway API
// object from its JSON, convert to holdfast objects, translate, build the
// snapshot, settle the statuses. Measures each stage of the first run,
// resident memory, and the time to publish a change to one HTTPRoute.
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

DiscoveredServices Services(int services) {
  DiscoveredServices out;
  for (int s = 0; s < services; ++s) {
    out[ServiceKey{Namespace(s, services), absl::StrCat("svc-", s)}].ports.push_back(
        DiscoveredServicePort{
            "http", 80, "", {{absl::StrCat("192.0.2.", s % 250 + 1), 8080, "", false}}});
  }
  return out;
}

struct Stages {
  double read = 0, convert = 0, translate = 0, snapshot = 0, statuses = 0;
  size_t resources = 0, bytes = 0, problems = 0;
  double Total() const { return read + convert + translate + snapshot + statuses; }
};

bool ByTotal(const Stages& a, const Stages& b) { return a.Total() < b.Total(); }

// One ApplyIfChanged: everything from the objects to the settled statuses.
Stages Publish(const KubeObjectsByResource& objects, const DiscoveredServices& services,
               ParsedRoutes& routes, gateway_api::ConversionCache& cache, Translator& translator,
               SnapshotPtr& last) {
  Stages s;
  auto t0 = Clock::now();
  gateway_api::GatewayApiInput api = GatewayApiInputOf(objects, services, &routes);
  auto t1 = Clock::now();
  gateway_api::Conversion conversion = gateway_api::ConvertGatewayApi(api, cache);
  auto t2 = Clock::now();
  TranslationInput input;
  input.services = services;
  for (GatewayObject& o : conversion.objects) {
    ObjectKey key = o.key();
    input.objects[std::move(key)] = std::move(o);  // as KubeConfigSource does
  }
  TranslationOutput out = translator.Translate(input);
  auto t3 = Clock::now();
  s.resources = out.resources.size();
  for (const auto& r : out.resources) s.bytes += r->serialized().size();
  auto snapshot = Snapshot::Build(std::move(out.resources), absl::Now(), {}, last.get());
  auto t4 = Clock::now();
  if (!snapshot.ok()) {
    std::fprintf(stderr, "snapshot: %s\n", std::string(snapshot.status().message()).c_str());
    std::exit(1);
  }
  last = *std::move(snapshot);
  gateway_api::GatewayApiStatuses settled = gateway_api::SettleStatuses(conversion, out.statuses);
  auto t5 = Clock::now();
  for (const auto& [key, status] : settled) s.problems += status->problems.size();
  s.read = Seconds(t1 - t0);
  s.convert = Seconds(t2 - t1);
  s.translate = Seconds(t3 - t2);
  s.snapshot = Seconds(t4 - t3);
  s.statuses = Seconds(t5 - t4);
  return s;
}

int Run(int routes, int rules, int services, int changes) {
  KubeObjectsByResource objects;
  objects["gatewayclasses"]["/holdfast"] = Object(GatewayClass());
  objects["gateways"]["infra/public"] = Object(Gateway());
  for (int i = 0; i < routes; ++i) {
    auto route = Object(HttpRoute(i, rules, services, 0));
    objects["httproutes"][route->ns + "/" + route->name] = route;
  }
  DiscoveredServices discovered = Services(services);

  const double rss_before = RssMb();
  ParsedRoutes parsed;  // as KubeConfigSource keeps them
  gateway_api::ConversionCache cache;
  Translator translator;
  SnapshotPtr snapshot;  // held, as the server holds what it serves
  const Stages first = Publish(objects, discovered, parsed, cache, translator, snapshot);
  const double rss_after = RssMb();
  if (first.problems != 0) {
    std::fprintf(stderr, "%zu problems in the statuses: the input is not what was meant\n",
                 first.problems);
    return 1;
  }

  std::vector<Stages> changed;
  for (int c = 1; c <= changes; ++c) {
    auto route = Object(HttpRoute(c * 7 % routes, rules, services, c));
    objects["httproutes"][route->ns + "/" + route->name] = route;
    changed.push_back(Publish(objects, discovered, parsed, cache, translator, snapshot));
  }
  std::sort(changed.begin(), changed.end(), ByTotal);
  // Other events of a cluster: a Service no route names is created (a
  // deployment elsewhere); the Gateway is written again (its annotations:
  // a new resourceVersion, the same listeners).
  std::vector<Stages> service_added;
  for (int c = 1; c <= std::min(changes, 10); ++c) {
    discovered[ServiceKey{"team-0", absl::StrCat("added-", c)}].ports.push_back(
        DiscoveredServicePort{"http", 80, "", {{"192.0.2.1", 8080, "", false}}});
    service_added.push_back(Publish(objects, discovered, parsed, cache, translator, snapshot));
  }
  std::sort(service_added.begin(), service_added.end(), ByTotal);
  objects["gateways"]["infra/public"] = Object(Gateway());
  const Stages gateway_written =
      Publish(objects, discovered, parsed, cache, translator, snapshot);

  std::printf("| figure | value |\n|---|---|\n");
  std::printf("| objects | %d HTTPRoutes x %d rules x 2 matches, %zu Services, 1 Gateway |\n",
              routes, rules, discovered.size());
  std::printf("| Envoy resources | %zu (%.1f MB serialized) |\n", first.resources,
              first.bytes / 1e6);
  std::printf("| read the Gateway API objects (JSON) | %.3f s |\n", first.read);
  std::printf("| convert to holdfast objects | %.3f s |\n", first.convert);
  std::printf("| translate | %.3f s |\n", first.translate);
  std::printf("| snapshot build | %.3f s |\n", first.snapshot);
  std::printf("| settle statuses | %.3f s |\n", first.statuses);
  std::printf("| first publish, total | %.3f s |\n", first.Total());
  std::printf("| resident memory added | %.0f MB |\n", rss_after - rss_before);
  if (!changed.empty()) {
    const Stages& median = changed[changed.size() / 2];
    std::printf("| one HTTPRoute changed, whole publish (median of %d) | %.3f s |\n", changes,
                median.Total());
    std::printf("| same, max | %.3f s |\n", changed.back().Total());
    std::printf(
        "| that median change: read / convert / translate / build / statuses | "
        "%.3f / %.3f / %.3f / %.3f / %.3f s |\n",
        median.read, median.convert, median.translate, median.snapshot, median.statuses);
  }
  if (!service_added.empty()) {
    const Stages& median = service_added[service_added.size() / 2];
    std::printf("| a Service no route names added, whole publish (median of %zu) | %.3f s |\n",
                service_added.size(), median.Total());
    std::printf("| that median: convert / translate | %.3f / %.3f s |\n", median.convert,
                median.translate);
    std::printf("| the Gateway written again (same listeners), whole publish | %.3f s |\n",
                gateway_written.Total());
    std::printf("| that: convert / translate | %.3f / %.3f s |\n", gateway_written.convert,
                gateway_written.translate);
  }
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
