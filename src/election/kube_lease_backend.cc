#include "src/election/kube_lease_backend.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

int64_t TermOf(const LeaseRecord& record) { return int64_t{record.lease_transitions} + 1; }

}  // namespace

absl::StatusOr<std::optional<LeaseStore::Versioned>> KubeLeaseBackend::ObserveLocked() {
  absl::StatusOr<LeaseStore::Versioned> current = store_->Get();
  if (absl::IsNotFound(current.status())) {
    observed_version_.clear();
    return std::nullopt;
  }
  if (!current.ok()) return current.status();
  if (current->resource_version != observed_version_) {
    observed_version_ = current->resource_version;
    observed_at_ = clock_.Monotonic();
  }
  return *std::move(current);
}

bool KubeLeaseBackend::ExpiredLocked(const LeaseRecord& record) const {
  if (record.holder_identity.empty()) return true;
  return clock_.Monotonic() - observed_at_ >= absl::Seconds(record.lease_duration_seconds);
}

absl::StatusOr<int64_t> KubeLeaseBackend::TakeLocked(
    const std::optional<LeaseStore::Versioned>& current, int64_t lease_id) {
  const absl::Time now = clock_.Now();
  LeaseRecord next;
  next.holder_identity = replica_id_;
  next.lease_duration_seconds = duration_seconds_;
  next.acquire_time = next.renew_time = now;
  if (current.has_value()) {
    const LeaseRecord& old = current->record;
    next.preferred_holder = old.preferred_holder;
    next.lease_transitions = old.lease_transitions;
    if (old.holder_identity == replica_id_) {
      next.acquire_time = old.acquire_time;  // still our term (an earlier process's)
    } else {
      ++next.lease_transitions;
    }
  }
  const absl::Duration sent = clock_.Monotonic();
  absl::StatusOr<std::string> written =
      current.has_value() ? store_->Update(next, current->resource_version) : store_->Create(next);
  if (absl::IsAborted(written.status()) || absl::IsAlreadyExists(written.status())) {
    return 0;  // another replica wrote first; the next step reads who
  }
  if (!written.ok()) return written.status();
  holding_ = lease_id;
  observed_version_ = *written;
  observed_at_ = sent;
  return TermOf(next);
}

absl::StatusOr<int64_t> KubeLeaseBackend::GrantLease(absl::Duration ttl) {
  absl::MutexLock lock(&mu_);
  // Never less than asked: the elector's safety rests on the lease
  // outliving its renew deadline.
  duration_seconds_ = static_cast<int32_t>(std::ceil(absl::ToDoubleSeconds(ttl)));
  return next_lease_id_++;
}

absl::StatusOr<int64_t> KubeLeaseBackend::CreateCandidate(const std::string& key,
                                                          const std::string& replica_id,
                                                          int64_t lease_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::optional<LeaseStore::Versioned>> current = ObserveLocked();
  if (!current.ok()) return current.status();
  holding_key_ = key;
  if (!current->has_value() || (*current)->record.holder_identity == replica_id_) {
    return TakeLocked(*current, lease_id);
  }
  const LeaseRecord& record = (*current)->record;
  if (!ExpiredLocked(record)) return 0;
  // An operator's preferred holder gets the first chance; others wait one
  // more lease duration, so a preference for a replica that is gone does
  // not keep everyone out.
  const bool preferred_elsewhere =
      !record.preferred_holder.empty() && record.preferred_holder != replica_id_;
  if (preferred_elsewhere &&
      clock_.Monotonic() - observed_at_ < 2 * absl::Seconds(record.lease_duration_seconds)) {
    return 0;
  }
  return TakeLocked(*current, lease_id);
}

absl::Status KubeLeaseBackend::RenewLease(int64_t lease_id) {
  absl::MutexLock lock(&mu_);
  if (lease_id != holding_) return absl::OkStatus();  // a candidate: nothing to renew
  absl::StatusOr<std::optional<LeaseStore::Versioned>> current = ObserveLocked();
  if (!current.ok()) return current.status();
  if (!current->has_value() || (*current)->record.holder_identity != replica_id_) {
    holding_ = 0;
    return absl::NotFoundError(absl::StrCat(
        "the Lease is held by ",
        current->has_value() ? (*current)->record.holder_identity : "nobody (deleted)"));
  }
  LeaseRecord next = (*current)->record;
  if (!next.preferred_holder.empty() && next.preferred_holder != replica_id_) {
    // Yield: release, and report the term over.
    next.holder_identity.clear();
    next.lease_duration_seconds = 1;
    next.renew_time = clock_.Now();
    holding_ = 0;
    absl::StatusOr<std::string> released = store_->Update(next, (*current)->resource_version);
    if (!released.ok() && !absl::IsAborted(released.status())) return released.status();
    return absl::NotFoundError(
        absl::StrCat("yielding to preferred holder ", next.preferred_holder));
  }
  next.renew_time = clock_.Now();  // to the microsecond: every renewal changes the object
  next.lease_duration_seconds = duration_seconds_;
  const absl::Duration sent = clock_.Monotonic();
  absl::StatusOr<std::string> renewed = store_->Update(next, (*current)->resource_version);
  if (absl::IsAborted(renewed.status())) {
    holding_ = 0;  // someone wrote over our renewal: the next step reads who holds it
    return absl::NotFoundError("the Lease changed under its holder");
  }
  if (!renewed.ok()) return renewed.status();
  observed_version_ = *renewed;
  observed_at_ = sent;
  return absl::OkStatus();
}

absl::Status KubeLeaseBackend::RevokeLease(int64_t lease_id) {
  absl::MutexLock lock(&mu_);
  if (lease_id != holding_) return absl::NotFoundError("not holding the Lease");
  absl::StatusOr<std::optional<LeaseStore::Versioned>> current = ObserveLocked();
  if (!current.ok()) return current.status();
  if (!current->has_value() || (*current)->record.holder_identity != replica_id_) {
    holding_ = 0;
    return absl::NotFoundError("the Lease is no longer ours");
  }
  // What client-go writes on release: no holder, a one-second duration.
  LeaseRecord released = (*current)->record;
  released.holder_identity.clear();
  released.lease_duration_seconds = 1;
  released.acquire_time = released.renew_time = clock_.Now();
  absl::StatusOr<std::string> written = store_->Update(released, (*current)->resource_version);
  if (!written.ok() && !absl::IsAborted(written.status())) return written.status();
  holding_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Candidate>> KubeLeaseBackend::FirstCandidate(
    const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::optional<LeaseStore::Versioned>> current = ObserveLocked();
  if (!current.ok()) return current.status();
  if (!current->has_value() || ExpiredLocked((*current)->record)) return std::nullopt;
  const LeaseRecord& record = (*current)->record;
  if (record.holder_identity == replica_id_ && holding_ != 0) {
    return Candidate{.key = holding_key_,
                     .replica_id = replica_id_,
                     .create_revision = TermOf(record),
                     .lease_id = holding_};
  }
  return Candidate{.key = absl::StrCat(prefix, "holder/", record.holder_identity),
                   .replica_id = record.holder_identity,
                   .create_revision = TermOf(record),
                   .lease_id = 0};
}

}  // namespace holdfast
