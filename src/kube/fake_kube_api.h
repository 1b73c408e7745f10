#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/kube/kube_api.h"

namespace holdfast {

// An in-memory API server for unit tests: one resourceVersion counter for
// every object (as etcd's revision), an event log per resource that watches
// read from, compaction (a watch or nothing older than the compacted
// version: OutOfRange, as a real server's 410), conflicts on a stale
// resourceVersion, and failures injected per call. A watch delivers the
// events after its version, then waits up to `linger` for more (0: returns
// at once, as if the server ended it), so tests drive it step by step.
class FakeKubeApi : public KubeApi {
 public:
  enum class Call { kList, kWatch, kGet, kUpdateStatus, kCreate, kReplace };

  // Creates or replaces an object (its metadata names it); returns it with
  // its new resourceVersion.
  nlohmann::json Put(const KubeResource& resource, nlohmann::json object);
  // Deletes an object; false if there was none.
  bool Delete(const KubeResource& resource, const std::string& ns, const std::string& name);
  // Appends a bookmark at the current version to every watch's stream.
  void Bookmark(const KubeResource& resource);
  // Forgets events up to the current version: watches from before it fail
  // with OutOfRange.
  void Compact();
  // The next call of `call` fails with `status` instead (queued in order).
  void FailNext(Call call, absl::Status status);
  void set_linger(absl::Duration linger);
  // Whether the server serves `resource` (as if its CRD were installed):
  // when not, List and Watch answer NotFound (HTTP 404). Served by default.
  void SetServed(const KubeResource& resource, bool served);
  int calls(Call call) const;
  // The `timeout` of every UpdateStatus call so far, in order.
  std::vector<absl::Duration> status_timeouts() const;
  std::string resource_version() const;

  absl::StatusOr<KubeList> List(const KubeResource& resource, const std::string& ns) override;
  absl::Status Watch(const KubeResource& resource, const KubeWatchRequest& request,
                     const std::function<void()>& on_open,
                     const std::function<void(const KubeWatchEvent&)>& on_event,
                     const absl::Notification* stop) override;
  absl::StatusOr<nlohmann::json> Get(const KubeResource& resource, const std::string& ns,
                                     const std::string& name) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const KubeResource& resource,
                                              const nlohmann::json& object,
                                              absl::Duration timeout) override;
  absl::StatusOr<nlohmann::json> Create(const KubeResource& resource, const std::string& ns,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Replace(const KubeResource& resource,
                                         const nlohmann::json& object) override;

 private:
  struct Event {
    int64_t version;
    KubeWatchEvent event;
  };
  struct Store {
    std::map<std::string, nlohmann::json> objects;  // by NS/NAME
    std::vector<Event> events;
  };
  absl::Status TakeFailure(Call call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stored object `object` names, if its resourceVersion is current:
  // NotFound, or Aborted for a stale version.
  absl::StatusOr<nlohmann::json*> CurrentLocked(Store& store, const nlohmann::json& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Record(Store& store, KubeWatchEvent::Type type, const nlohmann::json& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  int64_t version_ ABSL_GUARDED_BY(mu_) = 100;
  int64_t compacted_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration linger_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  std::map<std::string, Store> stores_ ABSL_GUARDED_BY(mu_);  // by resource path
  std::map<Call, std::deque<absl::Status>> failures_ ABSL_GUARDED_BY(mu_);
  std::map<Call, int> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> status_timeouts_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> not_served_ ABSL_GUARDED_BY(mu_);  // resource paths
};

}  // namespace holdfast
