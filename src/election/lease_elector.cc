#include "src/election/lease_elector.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/common/log.h"

namespace holdfast {

absl::Status LeaseElector::Validate(const Options& options) {
  if (options.prefix.empty() || options.prefix.back() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("election prefix \"", options.prefix, "\" must end with '/'"));
  }
  if (options.replica_id.empty()) {
    return absl::InvalidArgumentError("--replica-id must not be empty");
  }
  if (options.retry_period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--retry-period must be positive, got ",
                                                   absl::FormatDuration(options.retry_period)));
  }
  // A lease that outlives the renew deadline is what keeps two replicas from
  // leading at once: the old leader stops before the store frees its key.
  if (options.renew_deadline >= options.lease_duration) {
    return absl::InvalidArgumentError(
        absl::StrCat("--renew-deadline (", absl::FormatDuration(options.renew_deadline),
                     ") must be shorter than --lease-duration (",
                     absl::FormatDuration(options.lease_duration), ")"));
  }
  // Otherwise one failed renewal would already end the term.
  if (options.retry_period >= options.renew_deadline) {
    return absl::InvalidArgumentError(
        absl::StrCat("--retry-period (", absl::FormatDuration(options.retry_period),
                     ") must be shorter than --renew-deadline (",
                     absl::FormatDuration(options.renew_deadline), ")"));
  }
  if (!(options.retry_jitter >= 0 && options.retry_jitter < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("retry jitter must be in [0, 1), got ", options.retry_jitter));
  }
  return absl::OkStatus();
}

LeaseElector::LeaseElector(Options options, ElectionBackend* backend, const Clock& clock,
                           Random& random, MetricsRegistry* metrics)
    : options_(std::move(options)),
      backend_(backend),
      clock_(clock),
      random_(random),
      metrics_(metrics),
      transitions_total_(metrics->GetCounter("holdfast_leader_transitions_total",
                                             "Times this replica gained or lost leadership")) {
  // Computed at scrape time rather than stored, so a leader whose tick thread
  // is stuck stops reporting 1 as soon as its renew deadline passes.
  collector_id_ = metrics_->AddCollector([this](MetricWriter& writer) {
    Leadership view = Current();
    writer.Sample("holdfast_is_leader", "1 while this replica leads, else 0", "gauge", {},
                  view.is_leader ? 1 : 0);
    writer.Sample("holdfast_leader_term",
                  "Term (election key create revision) of the leader as last seen, 0 if unknown",
                  "gauge", {}, static_cast<double>(view.term));
  });
}

LeaseElector::~LeaseElector() {
  Stop();
  metrics_->RemoveCollector(collector_id_);
}

void LeaseElector::Start() {
  poller_.StartAdaptive(absl::ZeroDuration(), [this] { return Tick(); });
}

void LeaseElector::Stop() { poller_.Stop(); }

absl::Duration LeaseElector::Tick() {
  {
    absl::MutexLock tick_lock(&tick_mu_);
    Step();
  }
  DeliverEvents();
  return NextWait(random_.Fraction());
}

// Jitter and the renew deadline.
//
// Safety (never two leaders) does not depend on when ticks happen: whether
// this replica leads is decided by the monotonic clock against the last
// successful renewal's send time, whenever leadership is read (Current(),
// the start and end of every step), so no wait, however long, lets a leader
// act past its renew deadline, and renew_deadline < lease_duration keeps
// that deadline ahead of the lease's expiry in the store.
//
// What a wait can do is make a healthy leader renew too late and lose a term
// it could have kept. Without jitter the next attempt comes retry_period
// after a step, and retry_period < renew_deadline (Validate()). A jittered
// wait can be longer than retry_period, so while a lease is held it is
// capped at
//
//   max(retry_period, left - retry_period),  left = time to the renew deadline
//
// that is, the next attempt comes no later than it would have without
// jitter, or else at least a full retry period before the deadline. So an
// attempt falls within the last retry period before the deadline only where
// the unjittered schedule would have put it at least as late, for any
// options that pass Validate(): a healthy
// leader whose steps take d renews again within max(retry_period + d,
// renew_deadline - retry_period) of its last renewal, both under
// renew_deadline exactly when the unjittered elector's d + retry_period is.
// With the defaults (retry 2s, deadline 10s, jitter 0.2) the cap never bites
// on a healthy leader: its waits run 1.6s..2.4s, far inside the 10s; it
// bites only in the last 4.4s before a deadline, after failed renewals.
//
// The draw is spread over [low, cap] rather than clipped at the cap, so
// replicas near their deadlines still spread out; the low end is never
// lowered, so the cap cannot make retries come faster than
// retry_period * (1 - jitter).
absl::Duration LeaseElector::NextWait(double fraction) const {
  const absl::Duration period = options_.retry_period;
  const double jitter = options_.retry_jitter;
  const absl::Duration low = period * (1 - jitter);
  absl::Duration high = period * (1 + jitter);
  {
    absl::MutexLock lock(&mu_);
    if (lease_id_ != 0) {
      absl::Duration left = last_renew_sent_ + options_.renew_deadline - clock_.Monotonic();
      high = std::min(high, std::max(period, left - period));
    }
  }
  return low + (high - low) * fraction;
}

void LeaseElector::Step() {
  Candidacy candidacy = BeginStep();
  if (!RenewOrDrop(candidacy) || !EnsureLease(candidacy) || !EnsureCandidateKey(candidacy)) return;
  std::optional<Candidate> first;
  if (!FirstCandidateWithoutLeftovers(candidacy, &first)) return;
  absl::MutexLock lock(&mu_);
  if (generation_ != candidacy.generation) return;
  FollowFirstLocked(first);
}

LeaseElector::Candidacy LeaseElector::BeginStep() {
  Candidacy candidacy;
  std::vector<int64_t> dropped;
  {
    absl::MutexLock lock(&mu_);
    if (lease_id_ != 0 && !WithinDeadlineLocked()) {
      DropLeaseLocked(absl::StrCat("no successful lease renewal for ",
                                   absl::FormatDuration(options_.renew_deadline)),
                      /*revoke=*/true);
    }
    dropped.swap(to_revoke_);
    candidacy = Candidacy{.lease = lease_id_,
                          .key = own_key_,
                          .revision = own_revision_,
                          .first_revision = first_own_revision_,
                          .generation = generation_};
  }
  RevokeDropped(std::move(dropped));
  return candidacy;
}

bool LeaseElector::RenewOrDrop(Candidacy& candidacy) {
  if (candidacy.lease == 0) return true;
  // Taken before sending: the store starts the new TTL when the request
  // arrives, which is later, so our deadline ends before the lease can.
  absl::Duration sent = clock_.Monotonic();
  absl::Status renewed = backend_->RenewLease(candidacy.lease);
  absl::MutexLock lock(&mu_);
  if (generation_ != candidacy.generation) return false;
  if (absl::IsNotFound(renewed)) {
    // Our key went with the lease; campaign again right away with a new one.
    DropLeaseLocked("lease expired in the store", /*revoke=*/false);
    candidacy.lease = 0;
    candidacy.generation = generation_;
  } else if (!renewed.ok()) {
    NoteErrorLocked("renew lease", renewed);
    return false;
  } else {
    last_renew_sent_ = sent;
  }
  return true;
}

bool LeaseElector::EnsureLease(Candidacy& candidacy) {
  if (candidacy.lease != 0) return true;
  absl::Duration sent = clock_.Monotonic();
  absl::StatusOr<int64_t> granted = backend_->GrantLease(options_.lease_duration);
  absl::MutexLock lock(&mu_);
  if (!granted.ok()) {
    NoteErrorLocked("grant lease", granted.status());
    return false;
  }
  if (generation_ != candidacy.generation) {
    to_revoke_.push_back(*granted);
    return false;
  }
  lease_id_ = candidacy.lease = *granted;
  own_key_ = candidacy.key = absl::StrCat(options_.prefix, absl::Hex(*granted));
  own_revision_ = candidacy.revision = 0;
  last_renew_sent_ = sent;
  LogInfo("election: replica %s campaigning as %s", options_.replica_id, candidacy.key);
  return true;
}

bool LeaseElector::EnsureCandidateKey(Candidacy& candidacy) {
  if (candidacy.revision != 0) return true;
  absl::StatusOr<int64_t> created =
      backend_->CreateCandidate(candidacy.key, options_.replica_id, candidacy.lease);
  absl::MutexLock lock(&mu_);
  if (generation_ != candidacy.generation) return false;
  if (!created.ok()) {
    NoteErrorLocked("create election key", created.status());
    return false;
  }
  own_revision_ = *created;
  if (first_own_revision_ == 0) first_own_revision_ = *created;
  candidacy.first_revision = first_own_revision_;
  return true;
}

// A key under our replica id that predates this process's first candidacy
// was left by an earlier process of this replica, killed before it could
// resign. Nobody renews it, but it would stay first in line until its lease
// expired, which etcd restarts whenever it elects a raft leader, so nobody
// would lead for a whole lease. Revoking it is what the earlier process
// would have done; a live process under a duplicate id (a misconfiguration)
// loses one candidacy and campaigns again with a newer key, which this
// rule leaves alone.
bool LeaseElector::FirstCandidateWithoutLeftovers(const Candidacy& candidacy,
                                                  std::optional<Candidate>* first_out) {
  absl::StatusOr<std::optional<Candidate>> first = backend_->FirstCandidate(options_.prefix);
  for (int revoked = 0; revoked < kMaxLeftoversPerStep && first.ok() && first->has_value() &&
                        IsLeftover(**first, candidacy.first_revision);
       ++revoked) {
    LogInfo(
        "election: replica %s revoking %s (term %d), left by an earlier process of this "
        "replica",
        options_.replica_id, (*first)->key, (*first)->create_revision);
    absl::Status status = backend_->RevokeLease((*first)->lease_id);
    if (!status.ok() && !absl::IsNotFound(status)) {
      absl::MutexLock lock(&mu_);
      NoteErrorLocked("revoke a leftover election key", status);
      return false;
    }
    first = backend_->FirstCandidate(options_.prefix);
  }
  if (!first.ok()) {
    absl::MutexLock lock(&mu_);
    if (generation_ == candidacy.generation) {
      NoteErrorLocked("read election candidates", first.status());
    }
    return false;
  }
  *first_out = *std::move(first);
  return true;
}

void LeaseElector::FollowFirstLocked(const std::optional<Candidate>& first) {
  std::string previous_leader = leader_key_;
  if (first.has_value()) {
    leader_key_ = first->key;
    leader_id_ = first->replica_id;
    term_ = first->create_revision;
  } else {
    // Not even our own key: it vanished after we created it, so the lease is
    // gone too; the next renewal will say so.
    leader_key_.clear();
    leader_id_.clear();
    term_ = 0;
  }
  NoteSuccessLocked();
  bool leading = first.has_value() && first->key == own_key_;
  if (!leading && leader_key_ != previous_leader) {
    LogInfo("election: replica %s follows %s, term %d", options_.replica_id,
            leader_id_.empty() ? "nobody" : leader_id_, term_);
  }
  if (leading && !WithinDeadlineLocked()) {
    // The calls of this step took so long that the term may already be over.
    DropLeaseLocked("renew deadline passed during the election step", /*revoke=*/true);
    return;
  }
  SetLeaderLocked(
      leading, first.has_value() ? "another candidate's key is first" : "our election key is gone");
}

bool LeaseElector::IsLeftover(const Candidate& candidate, int64_t first_own_revision) const {
  return candidate.replica_id == options_.replica_id && first_own_revision != 0 &&
         candidate.create_revision < first_own_revision && candidate.lease_id != 0;
}

std::optional<LeaseElector::TermGuard> LeaseElector::HoldTerm(int64_t term) {
  TermGuard guard(&release_mu_, clock_);
  absl::MutexLock lock(&mu_);
  const Leadership now = ViewLocked();
  if (!now.is_leader || now.term != term) return std::nullopt;
  guard.deadline_ = last_renew_sent_ + options_.renew_deadline;
  return guard;
}

void LeaseElector::RevokeDropped(std::vector<int64_t> leases) {
  if (leases.empty()) return;
  // Writes of the ended term that are in flight land first (TermGuard).
  absl::WriterMutexLock release_lock(&release_mu_);
  std::vector<int64_t> failed;
  for (int64_t lease : leases) {
    absl::Status revoked = backend_->RevokeLease(lease);
    if (!revoked.ok() && !absl::IsNotFound(revoked)) {
      LogDebug("election: revoking lease %x: %s", lease, revoked.ToString());
      failed.push_back(lease);
    }
  }
  if (failed.empty()) return;
  // Retried every step until the store answers: a lease dropped during an
  // outage keeps our old key first in line (etcd extends leases when it
  // elects a new raft leader), and until it goes nobody leads.
  absl::MutexLock lock(&mu_);
  to_revoke_.insert(to_revoke_.end(), failed.begin(), failed.end());
}

Leadership LeaseElector::Current() const {
  absl::MutexLock lock(&mu_);
  return ViewLocked();
}

void LeaseElector::ReportFenced(int64_t term) {
  {
    absl::MutexLock lock(&mu_);
    if (term == 0 || own_revision_ != term) {
      LogDebug("election: ignoring fenced write of term %d (current candidacy %d)", term,
               own_revision_);
      return;
    }
    DropLeaseLocked(absl::StrCat("the store refused a status write of term ", term),
                    /*revoke=*/true);
  }
  DeliverEvents();
}

void LeaseElector::Resign() {
  std::vector<int64_t> dropped;
  {
    absl::MutexLock tick_lock(&tick_mu_);
    {
      absl::MutexLock lock(&mu_);
      if (lease_id_ != 0) DropLeaseLocked("resigning", /*revoke=*/true);
      dropped.swap(to_revoke_);
    }
    RevokeDropped(std::move(dropped));
  }
  DeliverEvents();
}

void LeaseElector::OnChange(std::function<void(const Leadership&)> listener) {
  absl::MutexLock lock(&mu_);
  listeners_.push_back(std::move(listener));
}

void LeaseElector::DeliverEvents() {
  mu_.Lock();
  if (delivering_) {
    mu_.Unlock();
    return;
  }
  delivering_ = true;
  while (!pending_events_.empty()) {
    Leadership event = std::move(pending_events_.front());
    pending_events_.pop_front();
    std::vector<std::function<void(const Leadership&)>> listeners = listeners_;
    mu_.Unlock();
    for (const auto& listener : listeners) listener(event);
    mu_.Lock();
  }
  delivering_ = false;
  mu_.Unlock();
}

bool LeaseElector::WithinDeadlineLocked() const {
  return lease_id_ != 0 && clock_.Monotonic() - last_renew_sent_ < options_.renew_deadline;
}

Leadership LeaseElector::ViewLocked() const {
  Leadership view{is_leader_, term_, leader_key_, leader_id_, options_.replica_id, transitions_};
  if (view.is_leader && !WithinDeadlineLocked()) {
    // What the next tick will find: we no longer know who leads.
    view.is_leader = false;
    view.term = 0;
    view.leader_key.clear();
    view.leader_id.clear();
  }
  return view;
}

void LeaseElector::SetLeaderLocked(bool is_leader, absl::string_view why) {
  if (is_leader_ == is_leader) return;
  is_leader_ = is_leader;
  ++transitions_;
  transitions_total_->Increment();
  if (is_leader) {
    LogInfo("election: replica %s is now the leader, term %d", options_.replica_id, term_);
  } else {
    LogWarning("election: replica %s stepped down: %s", options_.replica_id, why);
  }
  pending_events_.push_back(ViewLocked());
}

void LeaseElector::DropLeaseLocked(absl::string_view why, bool revoke) {
  if (is_leader_) {
    // Our own key was the leader's; that knowledge ends with the candidacy.
    leader_key_.clear();
    leader_id_.clear();
    term_ = 0;
    SetLeaderLocked(false, why);
  } else if (lease_id_ != 0) {
    LogInfo("election: replica %s dropping lease %x: %s", options_.replica_id, lease_id_, why);
  }
  if (revoke && lease_id_ != 0) to_revoke_.push_back(lease_id_);
  lease_id_ = 0;
  own_key_.clear();
  own_revision_ = 0;
  ++generation_;
}

void LeaseElector::NoteErrorLocked(absl::string_view operation, const absl::Status& status) {
  std::string kind = absl::StrCat(operation, ": ", absl::StatusCodeToString(status.code()));
  if (kind == last_error_) return;
  last_error_ = std::move(kind);
  LogWarning("election: replica %s could not %s: %s (keeping state; %s)", options_.replica_id,
             operation, status.ToString(),
             is_leader_ ? "leading until the renew deadline" : "will retry");
}

void LeaseElector::NoteSuccessLocked() {
  if (last_error_.empty()) return;
  last_error_.clear();
  LogInfo("election: replica %s reaches the store again", options_.replica_id);
}

}  // namespace holdfast
