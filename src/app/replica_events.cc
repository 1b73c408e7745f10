#include "src/app/replica_events.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace holdfast {

void ReplicaEvents::Observe(const ReplicaObservation& now) {
  ObservePublications(now);
  ObserveLeadership(now);
  ObserveStore(now);
  if (now.serving_persisted != (last_ ? last_->serving_persisted : false)) {
    log_->Record("serving", now.serving_persisted ? "serving the persisted last-known-good snapshot"
                                                  : "serving live configuration again");
  }
  last_ = now;
}

void ReplicaEvents::ObservePublications(const ReplicaObservation& now) {
  for (const auto& [group, snapshot] : now.groups) {
    if (last_) {
      auto before = last_->groups.find(group);
      if (before != last_->groups.end() && before->second.sequence == snapshot.sequence) continue;
    }
    log_->Record("publication",
                 absl::StrCat("snapshot ", snapshot.version, " published to group ", group, " (",
                              snapshot.resources, " resources)"),
                 snapshot.created);
  }
}

void ReplicaEvents::ObserveLeadership(const ReplicaObservation& now) {
  if (!now.leadership) return;
  const auto& lead = *now.leadership;
  std::optional<ReplicaObservation::Leadership> before;
  if (last_) before = last_->leadership;
  if (before && before->is_leader == lead.is_leader && before->leader == lead.leader &&
      before->term == lead.term) {
    return;
  }
  if (lead.is_leader) {
    log_->Record("leadership", absl::StrCat("this replica leads, term ", lead.term));
  } else if (before && before->is_leader) {
    log_->Record("leadership",
                 absl::StrCat("this replica stepped down",
                              lead.leader.empty() ? "" : absl::StrCat("; ", lead.leader, " leads"),
                              lead.term > 0 ? absl::StrCat(", term ", lead.term) : ""));
  } else if (!lead.leader.empty()) {
    log_->Record("leadership", absl::StrCat(lead.leader, " leads, term ", lead.term));
  } else if (before) {
    log_->Record("leadership", "no leader seen");
  }
}

void ReplicaEvents::ObserveStore(const ReplicaObservation& now) {
  if (!now.store) return;
  const auto& store = *now.store;
  const bool was_connected = last_ && last_->store ? last_->store->connected : true;
  if (was_connected && !store.connected) {
    store_lost_at_ = clock_.Now();
    log_->Record("store", absl::StrCat("store unreachable: ", store.last_error));
  } else if (!was_connected && store.connected) {
    log_->Record("store",
                 store_lost_at_ == absl::InfinitePast()
                     ? std::string("store reachable again")
                     : absl::StrFormat("store reachable again after %.0fs",
                                       absl::ToDoubleSeconds(clock_.Now() - store_lost_at_)));
  }
  const std::string was_refused = last_ && last_->store ? last_->store->access_error : "";
  if (store.access_error != was_refused) {
    log_->Record("store",
                 store.access_error.empty()
                     ? std::string("the store accepts this replica's credentials again")
                     : absl::StrCat("the store refuses this replica: ", store.access_error));
  }
}

void ReplicaEventWatch::Start() {
  poller_.Start(absl::Seconds(1), [this] { events_.Observe(observe_()); });
}

}  // namespace holdfast
