// The etcd source's path for a change at scale, over the in-memory store
// (FakeKeyValueStore: no server, no network, so what is timed is the
// source): N virtual services with R routes each (a key each), U upstreams
// (a key each) and one gateway. Each change puts one service's value; the
// source's watch sees it, its apply thread decodes it, updates the input,
// translates and publishes. Times the put until published, and the first
// listing until published.
//
//   etcd_source_bench [--services 10000] [--routes 10] [--upstreams 5000] [--changes 50]
//
// Prints one markdown table row per figure.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/translate/source_bench.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/etcd/fake_key_value_store.h"
#include "src/source/etcd_config_source.h"

namespace holdfast {
namespace {

using Steady = std::chrono::steady_clock;

std::string KeyOf(const char* kind, const std::string& name) {
  return ObjectStoreKey("/bench", "config", ObjectKey{kind, "bench", name});
}

// Counts publications, and when the last one was.
struct Published {
  absl::Mutex mu;
  int count ABSL_GUARDED_BY(mu) = 0;
  Steady::time_point last ABSL_GUARDED_BY(mu);

  void Add() {
    absl::MutexLock lock(&mu);
    ++count;
    last = Steady::now();
  }
  int Count() {
    absl::MutexLock lock(&mu);
    return count;
  }
  // Waits until more than `seen` were published; returns when the last was.
  Steady::time_point After(int seen) {
    absl::MutexLock lock(&mu);
    const auto more = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return count > seen; };
    mu.Await(absl::Condition(&more));
    return last;
  }
};

int Run(const SourceBenchSize& size) {
  const int services = size.services, routes = size.routes, upstreams = size.upstreams;
  const int changes = size.changes;
  FakeKeyValueStore store;
  store.Put(KeyOf("Gateway", "public"), GatewayYaml());
  for (int i = 0; i < upstreams; ++i) {
    store.Put(KeyOf("Upstream", absl::StrCat("upstream-", i)), UpstreamYaml(i));
  }
  for (int i = 0; i < services; ++i) {
    store.Put(KeyOf("VirtualService", absl::StrCat("service-", i)),
              ServiceYaml(i, routes, upstreams, 0));
  }
  MetricsRegistry metrics;
  Published published;
  EtcdConfigSource::Options options;
  options.prefix = "/bench";
  EtcdConfigSource source(options, &store, Clock::Real(), &metrics,
                          [&](SnapshotPtr) { published.Add(); });
  const auto start = Steady::now();
  source.Start();
  const double first = Seconds(published.After(0) - start);

  std::vector<double> times;
  for (int c = 1; c <= changes; ++c) {
    const int i = c * 7 % services;
    const int seen = published.Count();
    const auto put = Steady::now();
    store.Put(KeyOf("VirtualService", absl::StrCat("service-", i)),
              ServiceYaml(i, routes, upstreams, c));
    times.push_back(Seconds(published.After(seen) - put));
  }
  source.Stop();
  std::printf("| figure | value |\n|---|---|\n");
  std::printf("| keys | %d services, %d upstreams, 1 gateway |\n", services, upstreams);
  std::printf("| first listing, decode, translation and publication | %.3f s |\n", first);
  std::printf("| one service's value put, until published (median of %zu) | %.4f s |\n",
              times.size(), Percentile(times, 0.5));
  std::printf("| same, p99 | %.4f s |\n", Percentile(times, 0.99));
  return 0;
}

}  // namespace
}  // namespace holdfast

int main(int argc, char** argv) {
  return holdfast::Run(holdfast::ParseSourceBenchSize(argc, argv));
}
