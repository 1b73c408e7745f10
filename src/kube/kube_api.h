#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace holdfast {

// A resource type of the API: /apis/GROUP/VERSION/RESOURCE (core: /api/v1).
struct KubeResource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lowercase: "virtualservices"
  std::string kind;      // "VirtualService"
  // Lists and watches only the objects matching it (fieldSelector), e.g.
  // "type=kubernetes.io/tls" for Secrets; "" for every object.
  std::string field_selector = "";

  // The collection path, in namespace `ns` or across all of them ("").
  std::string Path(const std::string& ns) const;
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
};

struct KubeList {
  std::string resource_version;  // of the list as a whole: where a watch starts
  std::vector<nlohmann::json> items;
};

struct KubeWatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type;
  // The object; for a bookmark, only metadata.resourceVersion is meaningful.
  nlohmann::json object;
};

struct KubeWatchRequest {
  std::string ns;                // "" for all namespaces
  std::string resource_version;  // events after this version
  // Asks the server to end the watch after this long (timeoutSeconds); an
  // end then is normal and the caller watches again from where it was.
  absl::Duration timeout = absl::Minutes(5);
};

// Status codes of KubeApi calls, mapped once from HTTP (KubeClient) so
// that callers branch on codes, never on message text:
//   401 -> Unauthenticated, 403 -> PermissionDenied, 404 -> NotFound,
//   409 -> Aborted (a conflict: the resourceVersion precondition failed),
//   except for Create, where 409 -> AlreadyExists,
//   410 and a watch's "Expired"/"Gone" ERROR event -> OutOfRange (the
//   requested resourceVersion is too old: list again),
//   429 and 5xx -> Unavailable (with a Retry-After payload when the server
//   sent one), no connection -> Unavailable, deadline or stall ->
//   DeadlineExceeded, other 4xx -> InvalidArgument or FailedPrecondition.
inline bool IsGone(const absl::Status& status) { return absl::IsOutOfRange(status); }
inline bool IsConflict(const absl::Status& status) { return absl::IsAborted(status); }
// The wait the server asked for (Retry-After), if it did.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);
absl::Status WithRetryAfter(absl::Status status, absl::Duration wait);

// The small part of the Kubernetes API that holdfast uses. Implementations:
// KubeClient (HTTPS to a real API server) and FakeKubeApi (in memory, for
// unit tests). Every call is bounded in time; all are thread-safe.
class KubeApi {
 public:
  virtual ~KubeApi() = default;

  // Every object of `resource` in `ns` ("" = all), consistent at the list's
  // resourceVersion (pages are fetched and joined; a page token that
  // expires meanwhile is OutOfRange).
  virtual absl::StatusOr<KubeList> List(const KubeResource& resource, const std::string& ns) = 0;

  // Streams the changes after `request.resource_version` to `on_event`
  // (bookmarks included: they only move the version on) until the server
  // ends the watch (OK), `stop` is notified (Cancelled, promptly), the
  // stream stalls (DeadlineExceeded: not a byte for longer than the server
  // may stay silent), or an error (OutOfRange: the version is too old;
  // list again). `on_open` is called once the server has accepted the
  // watch. Callbacks run on the calling thread.
  virtual absl::Status Watch(const KubeResource& resource, const KubeWatchRequest& request,
                             const std::function<void()>& on_open,
                             const std::function<void(const KubeWatchEvent&)>& on_event,
                             const absl::Notification* stop) = 0;

  // One object; NotFound when it does not exist.
  virtual absl::StatusOr<nlohmann::json> Get(const KubeResource& resource, const std::string& ns,
                                             const std::string& name) = 0;

  // Replaces the status subresource of `object` (its metadata names it) if
  // its metadata.resourceVersion is still current (Aborted otherwise: read
  // it again); returns the object as stored, with its new resourceVersion.
  // The server abandons the write if it has not completed within `timeout`
  // of the request's arrival (the API server's `timeout` parameter: it
  // cancels its own store call, so a write waiting for an unavailable etcd
  // is not applied once etcd returns), and the client stops waiting after
  // it too. DeadlineExceeded, sending nothing, when `timeout` is under a
  // millisecond (the parameter's unit); absl::InfiniteDuration() leaves the
  // server's default.
  virtual absl::StatusOr<nlohmann::json> UpdateStatus(const KubeResource& resource,
                                                      const nlohmann::json& object,
                                                      absl::Duration timeout) = 0;

  // Creates `object` in `ns` ("" for a cluster-scoped resource); returns it
  // as stored. AlreadyExists when an object of that name exists.
  virtual absl::StatusOr<nlohmann::json> Create(const KubeResource& resource, const std::string& ns,
                                                const nlohmann::json& object) = 0;

  // Replaces `object` (its metadata names it; status is not written) if its
  // metadata.resourceVersion is still current, Aborted otherwise; returns it
  // as stored. An object without a resourceVersion is InvalidArgument: an
  // unconditional replace would overwrite writes it never saw.
  virtual absl::StatusOr<nlohmann::json> Replace(const KubeResource& resource,
                                                 const nlohmann::json& object) = 0;
};

}  // namespace holdfast
