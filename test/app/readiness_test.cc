#include "src/app/readiness.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

class StubSource : public ConfigSource {
 public:
  void Start() override {}
  void Stop() override {}
  StatusMap statuses() const override { return {}; }
  SourceHealth health() const override { return health_; }
  void OnStatuses(std::function<void(const StatusMap&)>) override {}
  void SetStatusOverlay(StatusMap) override {}
  SourceHealth health_;
};

TEST(ReadinessTest, NotReadyWithoutASnapshotAndSaysWhy) {
  SimulatedClock clock;
  SnapshotCache cache;
  StubSource source;
  source.health_.connected = false;
  source.health_.disconnected_since = clock.Now() - absl::Seconds(42);
  source.health_.last_error = "connection refused";
  LastKnownGood::State last;
  last.restore_error = "no snapshot file";
  Readiness r = ComputeReadiness(cache, &source, last, clock);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.reason,
            "no complete snapshot yet; store unreachable for 42s: connection refused; "
            "no snapshot file");
}

TEST(ReadinessTest, ReadyWhileServingButPersistenceFailuresAreShown) {
  SimulatedClock clock;
  SnapshotCache cache;
  cache.Set(cache.default_group(), *Snapshot::Build({}, clock.Now()));
  LastKnownGood::State last;
  last.serving_live = true;
  last.persist_error = "cannot write /state/last-good.snapshot.tmp: No space left on device";
  Readiness r = ComputeReadiness(cache, nullptr, last, clock);
  EXPECT_TRUE(r.ready);
  EXPECT_TRUE(absl::StrContains(r.reason, "cannot persist the snapshot: cannot write")) << r.reason;
}

}  // namespace
}  // namespace holdfast
