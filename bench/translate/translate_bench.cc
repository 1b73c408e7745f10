// Translation at scale (issue: gateway model): N virtual services with R
// routes each and U upstreams behind one gateway. Measures the full
// translation (decode excluded: objects are built in memory), the snapshot
// build, resident memory, and the time to publish a change to one virtual
// service and to add or remove an upstream. Prints one markdown table row
// per figure.
//
//   translate_bench [--services 10000] [--routes 10] [--upstreams 5000] [--changes 20]
//                   [--threads 0]   (0: one per core, as the server)
//                   [--pipeline 1]  (also: the same changes through the server's
//                                    ConfigPipeline, to publish and to statuses settled)
//                   [--scattered-domains 1]  (domains not in the services' order)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/snapshot/snapshot.h"
#include "src/source/config_pipeline.h"
#include "src/translate/translator.h"

namespace holdfast {
namespace {

double RssMb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE) / 1e6;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

GatewayObject MakeUpstream(int i) {
  GatewayObject o;
  o.meta.name = absl::StrCat("upstream-", i);
  o.meta.ns = "bench";
  UpstreamSpec spec;
  spec.hosts = {{absl::StrCat("10.", i / 65536 % 256, ".", i / 256 % 256, ".", i % 256), 8080, 1},
                {absl::StrCat("10.1", i / 65536 % 256, ".", i / 256 % 256, ".", i % 256), 8080, 1}};
  o.spec = spec;
  o.content_digest = absl::StrCat("u", i);
  return o;
}

// `scattered`: domains in another order than the services' names, as real
// ones are (gRPC listeners, named by domain, then come out of name order).
GatewayObject MakeService(int i, int routes, int upstreams, int generation, bool scattered) {
  GatewayObject o;
  o.meta.name = absl::StrCat("service-", i);
  o.meta.ns = "bench";
  o.meta.labels = {{"gateway", "public"}};
  VirtualServiceSpec spec;
  // 7919 is prime to 100003, a prime above any service count used here.
  spec.domains = {scattered ? absl::StrCat("api-", i * 7919 % 100003, ".example.com")
                            : absl::StrCat("service-", i, ".example.com")};
  for (int r = 0; r < routes; ++r) {
    Route route;
    route.name = absl::StrCat("r", r);
    route.match.path = {StringMatch::Kind::kPrefix, absl::StrCat("/api/v", generation, "/r", r)};
    if (r % 3 == 0) route.match.headers.push_back({"x-canary", {StringMatch::Kind::kExact, "1"}, false});
    if (r % 2 == 0) {
      route.action = ObjectRef{absl::StrCat("upstream-", (i * routes + r) % upstreams), ""};
    } else {
      route.action = std::vector<WeightedUpstream>{
          {{absl::StrCat("upstream-", (i + r) % upstreams), ""}, 90},
          {{absl::StrCat("upstream-", (i + r + 1) % upstreams), ""}, 10}};
    }
    route.options.timeout = absl::Seconds(5);
    spec.routes.push_back(route);
  }
  o.spec = spec;
  o.content_digest = absl::StrCat("s", i, "g", generation);
  return o;
}

double Percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(values.size() * fraction))];
}

// Times of a series of changes, each translated and published.
struct ChangeTimes {
  std::vector<double> change, translate, build;

  void Print(const char* what, bool details) const {
    if (change.empty()) return;
    std::printf("| %s, translate + build (median of %zu) | %.4f s |\n", what, change.size(),
                Percentile(change, 0.5));
    std::printf("| same, p99 | %.4f s |\n", Percentile(change, 0.99));
    if (!details) return;
    std::printf("| same, max | %.4f s |\n", Percentile(change, 1));
    std::printf("| of which translate (median) | %.4f s |\n", Percentile(translate, 0.5));
    std::printf("| of which snapshot build and release of the old one (median) | %.4f s |\n",
                Percentile(build, 0.5));
  }
};

// Applies a change to the input, translates, and builds the next snapshot
// after the current one, which it then releases, as the server does.
struct Publisher {
  Translator& translator;
  TranslationInput& input;
  SnapshotPtr current;

  template <typename Change>
  bool Publish(Change change, ChangeTimes& times) {
    change(input);
    auto t0 = std::chrono::steady_clock::now();
    TranslationOutput next = translator.Translate(input);
    auto t1 = std::chrono::steady_clock::now();
    auto next_snapshot = Snapshot::Build(std::move(next.resources), absl::Now(), {}, current.get());
    if (!next_snapshot.ok()) {
      std::fprintf(stderr, "snapshot: %s\n", std::string(next_snapshot.status().message()).c_str());
      return false;
    }
    current = *std::move(next_snapshot);
    translator.Recycle(std::move(next.statuses));  // as the server's pipeline does
    next = TranslationOutput();
    auto t2 = std::chrono::steady_clock::now();
    times.change.push_back(Seconds(t2 - t0));
    times.translate.push_back(Seconds(t1 - t0));
    times.build.push_back(Seconds(t2 - t1));
    return true;
  }
};

// The server's path for the same changes: ConfigPipeline::Apply translates,
// builds, publishes and settles the statuses (merged, logged when they
// change, kept for the admin pages and handed to the status writer).
struct PipelinePublisher {
  TranslationInput& input;
  MetricsRegistry metrics;
  std::chrono::steady_clock::time_point published;
  ConfigPipeline pipeline{"bench", TranslatorOptions{}, Clock::Real(), &metrics,
                          [this](SnapshotPtr) { published = std::chrono::steady_clock::now(); }};

  // `times.translate` holds the time to publish, `times.build` the time
  // after it until Apply returned.
  template <typename Change>
  bool Publish(Change change, ChangeTimes& times) {
    change(input);
    auto t0 = std::chrono::steady_clock::now();
    published = {};
    if (absl::Status applied = pipeline.Apply(input, {}); !applied.ok()) {
      std::fprintf(stderr, "apply: %s\n", std::string(applied.message()).c_str());
      return false;
    }
    auto t1 = std::chrono::steady_clock::now();
    if (published == std::chrono::steady_clock::time_point()) published = t1;  // same version
    times.change.push_back(Seconds(t1 - t0));
    times.translate.push_back(Seconds(published - t0));
    times.build.push_back(Seconds(t1 - published));
    return true;
  }
};

// One virtual service changed `changes` times through the config pipeline.
int RunPipeline(TranslationInput input, int routes, int upstreams, int services, int changes,
                bool scattered) {
  PipelinePublisher publisher{input};
  if (absl::Status first = publisher.pipeline.Apply(input, {}); !first.ok()) return 1;
  ChangeTimes times;
  for (int c = 1; c <= changes; ++c) {
    GatewayObject changed = MakeService(c * 7 % services, routes, upstreams, c, scattered);
    if (!publisher.Publish([&](TranslationInput& in) {
          in.objects.insert_or_assign(changed.key(), changed);
        }, times)) {
      return 1;
    }
  }
  std::printf("| one virtual service changed, through the config pipeline (median of %zu) | "
              "%.4f s |\n", times.change.size(), Percentile(times.change, 0.5));
  std::printf("| same, p99 | %.4f s |\n", Percentile(times.change, 0.99));
  std::printf("| of which until published (median) | %.4f s |\n",
              Percentile(times.translate, 0.5));
  std::printf("| of which after publishing (median) | %.4f s |\n",
              Percentile(times.build, 0.5));
  return 0;
}

int Run(int services, int routes, int upstreams, int changes, int threads, bool pipeline,
        bool scattered) {
  TranslationInput input;
  for (int i = 0; i < upstreams; ++i) {
    GatewayObject o = MakeUpstream(i);
    input.objects.emplace(o.key(), o);
  }
  for (int i = 0; i < services; ++i) {
    GatewayObject o = MakeService(i, routes, upstreams, 0, scattered);
    input.objects.emplace(o.key(), o);
  }
  GatewayObject gateway;
  gateway.meta.name = "public";
  gateway.meta.ns = "bench";
  GatewaySpec gw;
  gw.port = 8080;
  gw.virtual_service_selector = Selector{{{"gateway", "public"}}, {}, false};
  gateway.spec = gw;
  gateway.content_digest = "gw";
  input.objects.emplace(gateway.key(), gateway);

  const double rss_before = RssMb();
  Translator translator(TranslatorOptions{.threads = threads});
  auto start = std::chrono::steady_clock::now();
  TranslationOutput out = translator.Translate(input);
  auto translated = std::chrono::steady_clock::now();
  size_t count = out.resources.size();
  size_t bytes = 0;
  for (const auto& r : out.resources) bytes += r->serialized().size();
  auto snapshot = Snapshot::Build(std::move(out.resources), absl::Now());
  auto built = std::chrono::steady_clock::now();
  if (!snapshot.ok()) {
    std::fprintf(stderr, "snapshot: %s\n", std::string(snapshot.status().message()).c_str());
    return 1;
  }
  const double rss_after = RssMb();

  // Each change: translate, build, and the previous snapshot released (as
  // the server does when it publishes the next one).
  Publisher publisher{translator, input, *snapshot};
  ChangeTimes service_changes;
  for (int c = 1; c <= changes; ++c) {
    GatewayObject changed = MakeService(c * 7 % services, routes, upstreams, c, scattered);
    if (!publisher.Publish([&](TranslationInput& in) {
          in.objects.insert_or_assign(changed.key(), changed);
        }, service_changes)) {
      return 1;
    }
  }
  // Upstreams coming and going: one no route names, then one that routes of
  // a few services name, removed and put back.
  ChangeTimes unnamed_upstream, named_upstream;
  for (int c = 1; c <= changes; ++c) {
    GatewayObject extra = MakeUpstream(upstreams + c);
    bool ok = publisher.Publish(
        [&](TranslationInput& in) { in.objects.emplace(extra.key(), extra); }, unnamed_upstream);
    ok = ok && publisher.Publish([&](TranslationInput& in) { in.objects.erase(extra.key()); },
                                 unnamed_upstream);
    GatewayObject named = MakeUpstream(c * 13 % upstreams);
    ok = ok && publisher.Publish([&](TranslationInput& in) { in.objects.erase(named.key()); },
                                 named_upstream);
    ok = ok && publisher.Publish(
                   [&](TranslationInput& in) { in.objects.emplace(named.key(), named); },
                   named_upstream);
    if (!ok) return 1;
  }

  std::printf("| figure | value |\n|---|---|\n");
  std::printf("| objects | %d virtual services x %d routes, %d upstreams, 1 gateway |\n", services,
              routes, upstreams);
  std::printf("| Envoy resources | %zu (%.1f MB serialized) |\n", count, bytes / 1e6);
  std::printf("| full translation | %.3f s |\n", Seconds(translated - start));
  std::printf("| snapshot build (consistency check, digests) | %.3f s |\n", Seconds(built - translated));
  std::printf("| resident memory added | %.0f MB |\n", rss_after - rss_before);
  service_changes.Print("one virtual service changed", true);
  unnamed_upstream.Print("an upstream no route names added or removed", false);
  named_upstream.Print("an upstream some routes name removed or put back", false);
  if (pipeline) {
    return RunPipeline(std::move(input), routes, upstreams, services, changes, scattered);
  }
  return 0;
}

}  // namespace
}  // namespace holdfast

int main(int argc, char** argv) {
  int services = 10000, routes = 10, upstreams = 5000, changes = 20, threads = 0, pipeline = 0;
  int scattered = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--services") services = value;
    else if (flag == "--routes") routes = value;
    else if (flag == "--upstreams") upstreams = value;
    else if (flag == "--changes") changes = value;
    else if (flag == "--threads") threads = value;
    else if (flag == "--pipeline") pipeline = value;
    else if (flag == "--scattered-domains") scattered = value;
  }
  return holdfast::Run(services, routes, upstreams, changes, threads, pipeline != 0,
                       scattered != 0);
}
