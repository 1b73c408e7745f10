#include "src/xds/listener_monitor.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace holdfast {
namespace {

constexpr absl::string_view kAcceptFailed = "Failed accept4";

// Whole seconds, "0s" included (absl::FormatDuration writes zero as "0").
std::string WholeSeconds(absl::Duration duration) {
  return absl::StrCat(absl::ToInt64Seconds(duration), "s");
}

struct FailureLog {
  absl::Mutex mu;
  AcceptFailures failures ABSL_GUARDED_BY(mu);
};

FailureLog& Failures() {
  static FailureLog* const log = new FailureLog;  // used until the last thread ends
  return *log;
}

}  // namespace

void NoteGrpcLogMessage(absl::string_view message) {
  if (!absl::StartsWith(message, kAcceptFailed)) return;
  FailureLog& log = Failures();
  absl::MutexLock lock(&log.mu);
  ++log.failures.count;
  log.failures.last = std::string(message);
}

AcceptFailures AcceptFailuresSoFar() {
  FailureLog& log = Failures();
  absl::MutexLock lock(&log.mu);
  return log.failures;
}

ListenerMonitor::ListenerMonitor(Options options, const ListenerObservation& start)
    : options_(options), failures_baseline_(start.failures.count) {}

ListenerAction ListenerMonitor::Observe(const ListenerObservation& observation) {
  switch (phase_) {
    case Phase::kAccepting:
      CheckAccepting(observation);
      if (phase_ != Phase::kDead) return ListenerAction::kNone;
      [[fallthrough]];
    case Phase::kDead:
      if (!CanStart(observation)) return ListenerAction::kNone;
      phase_ = Phase::kStopped;
      return ListenerAction::kStopListening;
    case Phase::kStopped:
      if (!CanStart(observation)) return ListenerAction::kNone;
      return ListenerAction::kStartListening;
  }
  return ListenerAction::kNone;
}

void ListenerMonitor::CheckAccepting(const ListenerObservation& observation) {
  if (observation.failures.count > failures_baseline_) {
    Die(observation.now,
        absl::StrCat("gRPC stopped accepting (\"", observation.failures.last, "\")"));
    return;
  }
  const uint64_t queued = observation.queued.value_or(0);
  // A queue that got shorter was read from, however busy the listener.
  const bool shrank = queued < last_queued_;
  last_queued_ = queued;
  if (queued == 0 || shrank) {
    queued_since_.reset();
    return;
  }
  if (!queued_since_.has_value()) queued_since_ = observation.now;
  const absl::Duration stuck = observation.now - *queued_since_;
  if (stuck >= options_.stuck_after) {
    Die(*queued_since_,
        absl::StrCat(*observation.queued, " connections waiting to be accepted for ",
                     WholeSeconds(stuck)));
  }
}

void ListenerMonitor::Die(absl::Duration now, std::string why) {
  phase_ = Phase::kDead;
  dead_since_ = now;
  why_ = std::move(why);
  queued_since_.reset();
}

int64_t ListenerMonitor::Reserve(const DescriptorUsage& descriptors) const {
  return std::max<int64_t>(1, std::min(options_.reserve, descriptors.limit / 4));
}

bool ListenerMonitor::CanStart(const ListenerObservation& observation) {
  const DescriptorUsage& fds = observation.descriptors;
  const int64_t reserve = Reserve(fds);
  if (!fds.exhausted && fds.available() >= reserve) {
    waiting_for_.clear();
    return true;
  }
  waiting_for_ =
      absl::StrCat(fds.exhausted ? "all" : absl::StrCat(fds.open), " of ", fds.limit,
                   " file descriptors open; a new listener starts once ", reserve, " are free");
  return false;
}

void ListenerMonitor::Started(uint64_t failures_before) {
  phase_ = Phase::kAccepting;
  failures_baseline_ = failures_before;
  queued_since_.reset();
  last_queued_ = 0;
  why_.clear();
  waiting_for_.clear();
}

void ListenerMonitor::StartFailed(absl::string_view error) {
  waiting_for_ = absl::StrCat("a new listener failed to start: ", error);
}

ListenerState ListenerMonitor::state(absl::Duration now) const {
  if (phase_ == Phase::kAccepting) return {};
  std::string detail =
      absl::StrCat("not accepting connections for ", WholeSeconds(now - dead_since_), ": ", why_);
  if (!waiting_for_.empty()) absl::StrAppend(&detail, "; ", waiting_for_);
  return {false, detail};
}

}  // namespace holdfast
