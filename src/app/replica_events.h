#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "src/admin/event_log.h"
#include "src/common/poller.h"

namespace holdfast {

// Where a replica stands at one moment, as far as its event log cares.
struct ReplicaObservation {
  struct Group {
    uint64_t sequence = 0;
    std::string version;
    size_t resources = 0;
    absl::Time created;
  };
  std::map<std::string, Group> groups;
  // Leadership, when there is an election.
  struct Leadership {
    bool is_leader = false;
    std::string leader;  // empty: none seen
    int64_t term = 0;
  };
  std::optional<Leadership> leadership;
  // The store, when there is one.
  struct Store {
    bool connected = true;
    std::string last_error;
    std::string access_error;
  };
  std::optional<Store> store;
  bool serving_persisted = false;
};

// Turns successive observations into events: a snapshot published to a
// group, a change of leader or term, the store lost and regained (with how
// long), credentials refused, the persisted snapshot served or left. The
// first observation records only what is notable (a snapshot, a leader, a
// store already out of reach). Not thread-safe; one poller calls it.
class ReplicaEvents {
 public:
  ReplicaEvents(EventLog* log, const Clock& clock) : log_(log), clock_(clock) {}
  void Observe(const ReplicaObservation& now);

 private:
  void ObservePublications(const ReplicaObservation& now);
  void ObserveLeadership(const ReplicaObservation& now);
  void ObserveStore(const ReplicaObservation& now);

  EventLog* log_;
  const Clock& clock_;
  std::optional<ReplicaObservation> last_;
  absl::Time store_lost_at_ = absl::InfinitePast();
};

// Observes a replica once a second, on a Poller.
class ReplicaEventWatch {
 public:
  ReplicaEventWatch(EventLog* log, const Clock& clock, std::function<ReplicaObservation()> observe)
      : events_(log, clock), observe_(std::move(observe)) {}
  void Start();
  void Stop() { poller_.Stop(); }

 private:
  ReplicaEvents events_;
  std::function<ReplicaObservation()> observe_;
  Poller poller_;
};

}  // namespace holdfast
