#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "src/common/backoff.h"
#include "src/common/clock.h"
#include "src/common/poller.h"
#include "src/common/random.h"
#include "src/kube/kube_api.h"

namespace holdfast {

// One object as last seen from the API server.
struct KubeObject {
  std::string ns;
  std::string name;
  std::string resource_version;
  nlohmann::json object;
};
// Objects by "NAMESPACE/NAME"; the objects themselves are immutable and
// shared, so a copy of the map is cheap.
using KubeObjects = std::map<std::string, std::shared_ptr<const KubeObject>>;

// An object as the API server sent it, with its identity read leniently
// (missing or mistyped metadata leaves the fields empty).
std::shared_ptr<const KubeObject> MakeKubeObject(nlohmann::json json);

// Keeps a local copy of one resource (in one namespace or all), as
// client-go's reflector does: list, then watch from the list's
// resourceVersion; a watch that ends (the server's timeout) or breaks is
// resumed from the last version seen, bookmarks included, so nothing is
// missed or seen twice. When that version is too old (410 Gone) it lists
// again and replaces its set in one step: until the new listing arrives,
// the old set stays (nothing served is withdrawn because the server forgot
// history). Failures are retried with jittered exponential backoff (or the
// server's Retry-After, if longer) and never end the loop.
//
// RunOnce() is one step (a list, or one watch until it ends) and returns
// the wait before the next; Start() runs it on a Poller thread. Tests call
// RunOnce() directly on simulated time.
class Reflector {
 public:
  struct Options {
    KubeResource resource;
    std::string ns;  // "" for all namespaces
    absl::Duration watch_timeout = absl::Minutes(1);
    absl::Duration min_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
  };
  struct Health {
    bool connected = false;
    bool synced = false;           // a listing has been applied
    std::string resource_version;  // the last version seen
    std::string last_error;
    bool refused = false;           // the last error was 401 or 403
    // The last error was 404: the resource is not served (its CRD is not
    // installed). Listing is retried with backoff, as for any failure.
    bool not_found = false;
    absl::Time disconnected_since;  // when it last became unreachable
    absl::Time last_contact;        // last answer: a listing, an opened watch, an event
    int64_t lists = 0;
    int64_t gone = 0;  // 410s seen
  };

  // `on_change` is called (on the reflector's thread) after every change of
  // objects(); keep it short.
  Reflector(Options options, KubeApi* api, const Clock& clock, Random& random,
            std::function<void()> on_change);
  ~Reflector();

  void Start();
  // Ends a watch in progress promptly and joins the thread.
  void Stop();
  // One step; returns how long to wait before the next.
  absl::Duration RunOnce();

  KubeObjects objects() const;
  Health health() const;
  const Options& options() const { return options_; }

 private:
  absl::Duration List();
  absl::Duration WatchOnce();
  void Apply(const KubeWatchEvent& event);
  void MarkContact();
  absl::Duration Failed(const absl::Status& status);

  const Options options_;
  KubeApi* api_;
  const Clock& clock_;
  Backoff backoff_;  // the loop's thread only
  std::function<void()> on_change_;
  absl::Notification stop_;
  Poller poller_;

  mutable absl::Mutex mu_;
  KubeObjects objects_ ABSL_GUARDED_BY(mu_);
  std::string resource_version_ ABSL_GUARDED_BY(mu_);  // "" until listed, or after a 410
  Health health_ ABSL_GUARDED_BY(mu_);
  bool failure_logged_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace holdfast
