#pragma once

#include <functional>
#include <string>

#include "absl/time/time.h"
#include "src/translate/status.h"

namespace holdfast {

// How a config source stands with its store, for the admin endpoint and
// readiness. A source with no store (a directory) is always connected.
struct SourceHealth {
  bool connected = false;
  int64_t revision = 0;           // store revision of the config in use; 0 if none
  std::string last_error;         // why the store is unreachable, if it is
  absl::Time disconnected_since;  // when it last became unreachable
  // When the store last answered (a listing, events or a progress
  // notification): how stale the config may be.
  absl::Time last_contact;
  bool synced_once = false;  // a complete listing has been applied
  // Why the store refuses this replica's credentials or permissions, while
  // it does (it may still be connected: an open watch goes on delivering).
  std::string access_error;
  // The store endpoint its calls go to now (etcd fails over between
  // members); empty where there is only one.
  std::string endpoint;
};

// A source of gateway objects. Sources translate what they read into
// snapshots and hand them to a publish callback given at construction; they
// keep every object's status. Start() returns at once: reading, watching
// and retrying happen on the source's own threads, and no failure of the
// store stops them. Stop() waits for those threads.
class ConfigSource {
 public:
  virtual ~ConfigSource() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
  // The statuses of the last translation, by object.
  virtual StatusMap statuses() const = 0;
  virtual SourceHealth health() const = 0;
  // Called after every translation with the new statuses (on a source
  // thread; keep it short). Set before Start().
  virtual void OnStatuses(std::function<void(const StatusMap&)> listener) = 0;
  // Statuses laid over the translation's from now on (a held rollout's,
  // src/rollout; empty: none), reported from the source's next
  // translation, which follows soon (ConfigPipeline::SetOverlay).
  // Thread-safe and quick: never waits for the source's work, so it may be
  // called from anything the source's publishing calls into.
  virtual void SetStatusOverlay(StatusMap overlay) = 0;
};

}  // namespace holdfast
