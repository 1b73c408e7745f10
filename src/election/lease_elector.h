#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/poller.h"
#include "src/common/random.h"
#include "src/election/election_backend.h"

namespace holdfast {

// What one replica knows about leadership at one moment.
struct Leadership {
  // True only while this replica leads and its last successful lease renewal
  // was sent less than the renew deadline ago, checked when the value is made.
  bool is_leader = false;
  // The create revision of the leader's election key (ours while is_leader),
  // as last read; 0 when unknown. Status writes are fenced by it.
  int64_t term = 0;
  // The leader's election key and replica id as last read; empty when unknown.
  std::string leader_key;
  std::string leader_id;
  // This replica's id.
  std::string replica_id;
  // How many times this replica gained or lost leadership. Orders the values
  // passed to OnChange listeners.
  uint64_t transitions = 0;
};

// Leader election on leases, after docs/etcd.md "Leader election". A replica
// campaigns by creating `prefix + hex(lease id)` bound to a lease of
// `lease_duration`; the candidate with the lowest create revision leads and
// that revision is its term. The lease is renewed about every `retry_period`
// (jittered, see Options::retry_jitter). A replica whose last successful
// renewal was sent `renew_deadline` ago or more (by its own monotonic clock)
// stops acting as leader, and since renew_deadline < lease_duration it does
// so before the store can expire its lease and let another replica lead. It
// then campaigns again with a new lease; it never gives up. A key under this
// replica's id older than this process's first candidacy is a leftover of an
// earlier, killed process of the same replica and is revoked at once, so
// replica ids must be unique among live processes (as Kubernetes lease
// holders' identities are).
//
// Thread-safe. Tick() is driven by Start()'s thread, or directly by tests on a
// SimulatedClock (then Start() is never called).
class LeaseElector {
 public:
  struct Options {
    // Election keys live directly under it; must end with '/'.
    std::string prefix;  // e.g. "/holdfast/election/"
    std::string replica_id;
    absl::Duration lease_duration = absl::Seconds(15);
    absl::Duration renew_deadline = absl::Seconds(10);
    absl::Duration retry_period = absl::Seconds(2);
    // Each wait between ticks is drawn uniformly from
    // [retry_period * (1 - retry_jitter), retry_period * (1 + retry_jitter)],
    // so replicas that lost the store together do not retry it in lockstep;
    // while holding a lease the upper end is capped (see NextWait()).
    double retry_jitter = 0.2;
  };

  // OK when `options` can be used: a prefix ending with '/', a replica id,
  // 0 < retry_period < renew_deadline < lease_duration and
  // 0 <= retry_jitter < 1. The message names the command-line flags, for the
  // CLI to print.
  static absl::Status Validate(const Options& options);

  // `options` must pass Validate(). `backend`, `clock`, `random` (which
  // jitters the waits between ticks) and `metrics` must outlive the elector.
  // Makes no backend call: campaigning starts on the first Tick().
  LeaseElector(Options options, ElectionBackend* backend, const Clock& clock, Random& random,
               MetricsRegistry* metrics);
  LeaseElector(const LeaseElector&) = delete;
  LeaseElector& operator=(const LeaseElector&) = delete;
  // Stops the tick thread. Does not resign: call Resign() for that.
  ~LeaseElector();

  // Runs Tick() now and then again after each wait it returns, on a
  // Poller's thread, until Stop(). Call at most once.
  void Start();
  // Stops the tick thread promptly, waiting for a running Tick() to return
  // (which may take as long as the backend call it is in). Idempotent.
  void Stop();

  // One step of the state machine: drops a lease whose renew deadline has
  // passed, grants a lease and creates the election key if there is none,
  // else renews the lease, then reads who leads. Backend errors keep the
  // state (the renew deadline decides) and are logged once per kind, not per
  // tick. Calls listeners on transitions, after releasing all locks. One
  // Tick() runs at a time; do not call it from a listener.
  //
  // Returns how long to wait before the next Tick(): a draw from the jitter
  // range (Options::retry_jitter), capped as of the end of this one while a
  // lease is held. Start() waits that long; tests on simulated time may.
  absl::Duration Tick();

  // The current view, with is_leader re-checked against the renew deadline
  // now: a leader whose tick thread is stuck, or whose process was paused,
  // reports false as soon as the deadline passes, before any tick.
  Leadership Current() const;

  // Held by a writer around one write of `term` (a status PUT). A term ends
  // locally at once (Current() says so), but this replica releases its lease
  // in the store only after every guard is gone: a write checked against
  // the term therefore lands before another replica can take over by that
  // release. (Found by the Kubernetes chaos run: the API server's fencing
  // policy reads the Lease from a cache, so it accepted a write that landed
  // just after the release.) Hold it only for the write: a Tick() that
  // releases waits for it. A thread holding one must not ask for another.
  //
  // A store can still apply a write after the writer's term has ended (the
  // API server waits for its etcd, then commits). TimeLeft() bounds it:
  // send the write with that deadline and the store abandons it before
  // another replica can take over (docs/kubernetes.md "Fencing").
  class TermGuard {
   public:
    TermGuard(absl::Mutex* release_mu, const Clock& clock)
        : lock_(std::make_unique<absl::ReaderMutexLock>(release_mu)), clock_(&clock) {}

    // Time until the term's renew deadline (monotonic clock); may be
    // negative once it has passed.
    absl::Duration TimeLeft() const { return deadline_ - clock_->Monotonic(); }

   private:
    friend class LeaseElector;
    std::unique_ptr<absl::ReaderMutexLock> lock_;
    const Clock* clock_;
    absl::Duration deadline_ = absl::ZeroDuration();  // monotonic
  };

  // A guard while this replica leads in `term`; nullopt when it does not.
  std::optional<TermGuard> HoldTerm(int64_t term);

  // The store refused a status write fenced by `term`. If that is this
  // replica's current term, steps down at once (listeners are told) and drops
  // the lease; the next Tick() revokes it and campaigns with a new lease.
  // Reports about an older term are ignored. Safe to call from a listener.
  void ReportFenced(int64_t term);

  // Ends this replica's candidacy for shutdown: steps down and revokes the
  // lease so another replica can lead without waiting for it to expire. Call
  // after Stop(); a later Tick() would campaign again.
  void Resign();

  // Adds a listener called with the new view on every transition (gaining or
  // losing leadership). Called without the elector's locks held, from the
  // thread that caused the transition (the tick thread, or a ReportFenced()
  // caller), one call at a time and in order of `transitions`. Listeners may
  // call Current() and ReportFenced().
  void OnChange(std::function<void(const Leadership&)> listener);

 private:
  // Step of Tick() that makes the backend calls; holds tick_mu_. Its parts,
  // in order, each false (or Aborted) when the step ends there: an error
  // was noted, or the candidacy was dropped meanwhile.
  void Step() ABSL_EXCLUSIVE_LOCKS_REQUIRED(tick_mu_);
  // The candidacy as one step saw it at its start (copied out of mu_, so
  // that backend calls run without it).
  struct Candidacy {
    int64_t lease = 0;  // 0: none
    std::string key;
    int64_t revision = 0;  // of our key; 0: not created yet
    int64_t first_revision = 0;
    uint64_t generation = 0;  // generation_ when taken
  };
  // Drops a lease past its renew deadline and revokes dropped leases.
  Candidacy BeginStep() ABSL_LOCKS_EXCLUDED(mu_);
  // Renews the lease; one the store no longer has is dropped, to campaign
  // again at once.
  bool RenewOrDrop(Candidacy& candidacy) ABSL_LOCKS_EXCLUDED(mu_);
  bool EnsureLease(Candidacy& candidacy) ABSL_LOCKS_EXCLUDED(mu_);
  bool EnsureCandidateKey(Candidacy& candidacy) ABSL_LOCKS_EXCLUDED(mu_);
  // The first key in line, after revoking keys an earlier process of this
  // replica left (IsLeftover()).
  bool FirstCandidateWithoutLeftovers(const Candidacy& candidacy, std::optional<Candidate>* first)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Leads when `first` is our key, else follows it.
  void FollowFirstLocked(const std::optional<Candidate>& first) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The wait before the next tick, drawn with `fraction` (uniform in [0, 1))
  // from the jitter range and capped while a lease is held; see the .cc.
  absl::Duration NextWait(double fraction) const ABSL_LOCKS_EXCLUDED(mu_);
  // Revokes leases dropped earlier, best effort.
  void RevokeDropped(std::vector<int64_t> leases);
  // True for an election key of this replica's id created before this
  // process's first candidacy (`first_own_revision`, 0 until there is one):
  // an earlier process of this replica left it. See
  // FirstCandidateWithoutLeftovers().
  bool IsLeftover(const Candidate& candidate, int64_t first_own_revision) const;
  // Bounds the revoke-and-reread loop of one Step(); one killed process
  // leaves one key, so more than this is not expected.
  static constexpr int kMaxLeftoversPerStep = 4;
  // Calls listeners with queued transitions; returns at once when another
  // thread (or a caller up this thread's stack) is already delivering them.
  void DeliverEvents() ABSL_LOCKS_EXCLUDED(mu_);

  bool WithinDeadlineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Leadership ViewLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetLeaderLocked(bool is_leader, absl::string_view why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the candidacy: steps down if leading, forgets the lease and key, and
  // queues the lease for revocation when `revoke`.
  void DropLeaseLocked(absl::string_view why, bool revoke) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteErrorLocked(absl::string_view operation, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteSuccessLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  ElectionBackend* const backend_;
  const Clock& clock_;
  Random& random_;
  MetricsRegistry* const metrics_;
  Counter* const transitions_total_;
  int collector_id_ = 0;

  // Serializes Tick() and Resign(), so backend calls for one candidacy never
  // overlap. Never held while calling listeners. Order: tick_mu_, then mu_.
  absl::Mutex tick_mu_;
  // Read-held by TermGuards, write-held while releasing leases. Order:
  // tick_mu_, then release_mu_, then mu_.
  absl::Mutex release_mu_;

  mutable absl::Mutex mu_;
  // The candidacy: lease (0 when none), our key, and its create revision (0
  // until created).
  int64_t lease_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::string own_key_ ABSL_GUARDED_BY(mu_);
  int64_t own_revision_ ABSL_GUARDED_BY(mu_) = 0;
  // The create revision of the first election key this process made; keys of
  // our replica id older than it are leftovers (IsLeftover()).
  int64_t first_own_revision_ ABSL_GUARDED_BY(mu_) = 0;
  // Monotonic time the last successful renewal (or the grant) was sent.
  absl::Duration last_renew_sent_ ABSL_GUARDED_BY(mu_);
  // Bumped whenever the candidacy is dropped, so a Step() whose backend call
  // raced with ReportFenced() discards its now stale result.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> to_revoke_ ABSL_GUARDED_BY(mu_);

  bool is_leader_ ABSL_GUARDED_BY(mu_) = false;
  int64_t term_ ABSL_GUARDED_BY(mu_) = 0;
  std::string leader_key_ ABSL_GUARDED_BY(mu_);
  std::string leader_id_ ABSL_GUARDED_BY(mu_);
  uint64_t transitions_ ABSL_GUARDED_BY(mu_) = 0;
  // "operation: code" of the last backend error since the last fully
  // successful step, so an outage is logged once rather than every tick.
  std::string last_error_ ABSL_GUARDED_BY(mu_);

  std::vector<std::function<void(const Leadership&)>> listeners_ ABSL_GUARDED_BY(mu_);
  std::deque<Leadership> pending_events_ ABSL_GUARDED_BY(mu_);
  bool delivering_ ABSL_GUARDED_BY(mu_) = false;

  Poller poller_;  // Tick() now, then after each wait it returns
};

}  // namespace holdfast
