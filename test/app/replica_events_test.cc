#include "src/app/replica_events.h"

#include "gtest/gtest.h"

namespace holdfast {
namespace {

std::vector<std::string> Messages(const EventLog& log) {
  std::vector<std::string> out;
  for (const EventLog::Event& event : log.Recent()) out.insert(out.begin(), event.message);
  return out;  // oldest first
}

ReplicaObservation WithSnapshot(uint64_t sequence, const std::string& version) {
  ReplicaObservation now;
  now.groups["default"] = {sequence, version, 4, absl::UnixEpoch()};
  return now;
}

TEST(ReplicaEventsTest, PublicationsAreRecordedOnceEach) {
  SimulatedClock clock;
  EventLog log(clock);
  ReplicaEvents events(&log, clock);
  events.Observe(ReplicaObservation{});
  events.Observe(WithSnapshot(1, "v1"));
  events.Observe(WithSnapshot(1, "v1"));
  events.Observe(WithSnapshot(2, "v2"));
  EXPECT_EQ(Messages(log),
            (std::vector<std::string>{"snapshot v1 published to group default (4 resources)",
                                      "snapshot v2 published to group default (4 resources)"}));
}

TEST(ReplicaEventsTest, LeadershipAndStoreTransitionsAreNamedWithHowLong) {
  SimulatedClock clock;
  EventLog log(clock);
  ReplicaEvents events(&log, clock);
  ReplicaObservation now;
  now.leadership = ReplicaObservation::Leadership{false, "b", 3};
  now.store = ReplicaObservation::Store{true, "", ""};
  events.Observe(now);
  now.leadership = ReplicaObservation::Leadership{true, "a", 4};
  events.Observe(now);
  now.store = ReplicaObservation::Store{false, "connection refused", ""};
  events.Observe(now);
  clock.Advance(absl::Seconds(12));
  now.leadership = ReplicaObservation::Leadership{false, "", 4};
  events.Observe(now);
  now.store = ReplicaObservation::Store{true, "", ""};
  now.serving_persisted = true;
  events.Observe(now);
  now.store = ReplicaObservation::Store{true, "", "permission denied"};
  now.serving_persisted = false;
  events.Observe(now);
  EXPECT_EQ(Messages(log), (std::vector<std::string>{
                               "b leads, term 3",
                               "this replica leads, term 4",
                               "store unreachable: connection refused",
                               "this replica stepped down, term 4",
                               "store reachable again after 12s",
                               "serving the persisted last-known-good snapshot",
                               "the store refuses this replica: permission denied",
                               "serving live configuration again",
                           }));
}

}  // namespace
}  // namespace holdfast
