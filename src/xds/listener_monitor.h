#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/common/descriptors.h"

namespace holdfast {

// gRPC 1.51 ends a listener's accept loop for good when accept4 fails with
// anything but EAGAIN, EINTR or ECONNABORTED (EMFILE, say), and says so only
// in its log: "Failed accept4: <strerror>". serve's gpr log function passes
// every gRPC message here. The text is gRPC's, not an API, so the monitor
// below also watches the accept queue, which does not depend on it.
void NoteGrpcLogMessage(absl::string_view message);

struct AcceptFailures {
  uint64_t count = 0;
  std::string last;  // the latest message
};
// The accept failures gRPC has logged in this process so far. Process-wide:
// the message does not say which listener failed, and holdfast has one.
AcceptFailures AcceptFailuresSoFar();

// What the xDS server sees at one check.
struct ListenerObservation {
  absl::Duration now;  // Clock::Monotonic()
  AcceptFailures failures;
  // Connections waiting in the listening sockets' accept queue; nullopt
  // when unknown (no listening socket, or /proc/net unreadable).
  std::optional<uint64_t> queued;
  DescriptorUsage descriptors;
};

enum class ListenerAction {
  kNone,
  // Shut the dead listening sockets down (they still hold the port and take
  // connections into a queue nobody reads).
  kStopListening,
  // Start a new listener on the port.
  kStartListening,
};

struct ListenerState {
  bool accepting = true;
  std::string detail;  // why not, while not accepting
};

// Decides, check by check, whether the xDS listener still accepts
// connections and when to replace it. Pure logic on observations, so it is
// tested with made-up ones; XdsServer does the observing and the acting.
//
// Accepting -> dead: gRPC logged an accept failure since the listener
//   started, or its accept queue stayed non-empty and never got shorter
//   from one check to the next for `stuck_after`. gRPC drains the queue on
//   every wakeup, so such a queue means nothing accepts; the bound is long
//   because a listener swamped by a fleet reconnecting at once can keep a
//   queue for a while, and replacing it resets every queued connection.
// Dead -> stopped: once `reserve` descriptors are free (a listener started
//   with none free would fail on its first connection).
// Stopped -> accepting: at the next check, so that a complaint from the
//   listener just shut down is not taken for the new one's.
class ListenerMonitor {
 public:
  struct Options {
    absl::Duration stuck_after = absl::Seconds(30);
    // Capped at a quarter of the limit, so that tiny limits still recover.
    int64_t reserve = 32;
  };

  ListenerMonitor(Options options, const ListenerObservation& start);

  ListenerAction Observe(const ListenerObservation& observation);
  // A new listener started; `failures_before` was read just before it did.
  void Started(uint64_t failures_before);
  void StartFailed(absl::string_view error);

  ListenerState state(absl::Duration now) const;
  // Descriptors that must be free before a new listener starts.
  int64_t Reserve(const DescriptorUsage& descriptors) const;

 private:
  enum class Phase { kAccepting, kDead, kStopped };

  void CheckAccepting(const ListenerObservation& observation);
  void Die(absl::Duration now, std::string why);
  bool CanStart(const ListenerObservation& observation);

  const Options options_;
  Phase phase_ = Phase::kAccepting;
  uint64_t failures_baseline_;
  std::optional<absl::Duration> queued_since_;
  uint64_t last_queued_ = 0;
  absl::Duration dead_since_;
  std::string why_;
  std::string waiting_for_;  // what a restart waits for, if anything
};

}  // namespace holdfast
