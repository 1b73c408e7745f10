#include "src/kube/reflector.h"

#include "absl/strings/str_cat.h"
#include "src/common/log.h"
#include "src/kube/json_fields.h"

namespace holdfast {
namespace {

std::string KeyOf(const KubeObject& object) { return absl::StrCat(object.ns, "/", object.name); }

// A watch that ended by itself this soon without delivering anything is
// treated as a failure (waits a backoff), so a server or proxy that ends
// watches at once cannot make the loop spin.
constexpr absl::Duration kShortestQuietWatch = absl::Seconds(1);

}  // namespace

std::shared_ptr<const KubeObject> MakeKubeObject(nlohmann::json json) {
  auto object = std::make_shared<KubeObject>();
  const nlohmann::json& meta = JsonField(json, "metadata");
  object->ns = JsonString(meta, "namespace");
  object->name = JsonString(meta, "name");
  object->resource_version = JsonString(meta, "resourceVersion");
  object->object = std::move(json);
  return object;
}

Reflector::Reflector(Options options, KubeApi* api, const Clock& clock, Random& random,
                     std::function<void()> on_change)
    : options_(std::move(options)),
      api_(api),
      clock_(clock),
      backoff_(options_.min_backoff, options_.max_backoff, random),
      on_change_(std::move(on_change)) {
  health_.disconnected_since = clock_.Now();
  health_.last_error = "not connected yet";
}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  poller_.StartAdaptive(absl::ZeroDuration(), [this] { return RunOnce(); });
}

void Reflector::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  poller_.Stop();
}

KubeObjects Reflector::objects() const {
  absl::MutexLock lock(&mu_);
  return objects_;
}

Reflector::Health Reflector::health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

absl::Duration Reflector::RunOnce() {
  if (stop_.HasBeenNotified()) return absl::ZeroDuration();
  bool listed;
  {
    absl::MutexLock lock(&mu_);
    listed = !resource_version_.empty();
  }
  return listed ? WatchOnce() : List();
}

void Reflector::MarkContact() {
  absl::MutexLock lock(&mu_);
  if (!health_.connected && failure_logged_) {
    LogInfo("kubernetes: %s reachable again (after %s)", options_.resource.resource,
            absl::FormatDuration(
                absl::Trunc(clock_.Now() - health_.disconnected_since, absl::Milliseconds(100))));
  }
  health_.connected = true;
  health_.last_error.clear();
  health_.refused = false;
  health_.not_found = false;
  health_.last_contact = clock_.Now();
}

absl::Duration Reflector::Failed(const absl::Status& status) {
  absl::Duration wait = backoff_.Next();
  if (std::optional<absl::Duration> asked = RetryAfter(status); asked && *asked > wait) {
    wait = *asked;
  }
  absl::MutexLock lock(&mu_);
  // Logged once per outage; before the first contact, unreachable since
  // the start.
  if (health_.connected || !failure_logged_) {
    if (health_.connected) health_.disconnected_since = clock_.Now();
    failure_logged_ = true;
    LogWarning("kubernetes: %s%s%s: %s; serving what was last read, retrying in %s",
               options_.resource.resource, options_.ns.empty() ? "" : " in ", options_.ns,
               status.message(), absl::FormatDuration(absl::Trunc(wait, absl::Milliseconds(1))));
  }
  health_.connected = false;
  health_.last_error = std::string(status.message());
  health_.refused = absl::IsUnauthenticated(status) || absl::IsPermissionDenied(status);
  health_.not_found = absl::IsNotFound(status);
  return wait;
}

absl::Duration Reflector::List() {
  absl::StatusOr<KubeList> list = api_->List(options_.resource, options_.ns);
  if (!list.ok()) return Failed(list.status());
  KubeObjects fresh;
  for (nlohmann::json& item : list->items) {
    std::shared_ptr<const KubeObject> object = MakeKubeObject(std::move(item));
    fresh[KeyOf(*object)] = std::move(object);
  }
  MarkContact();
  {
    absl::MutexLock lock(&mu_);
    objects_ = std::move(fresh);  // replaces the old set in one step
    resource_version_ = list->resource_version;
    health_.resource_version = list->resource_version;
    health_.synced = true;
    ++health_.lists;
  }
  backoff_.Reset();
  on_change_();
  return absl::ZeroDuration();
}

void Reflector::Apply(const KubeWatchEvent& event) {
  MarkContact();
  std::string version = JsonString(JsonField(event.object, "metadata"), "resourceVersion");
  {
    absl::MutexLock lock(&mu_);
    if (!version.empty()) {
      resource_version_ = version;
      health_.resource_version = version;
    }
    if (event.type == KubeWatchEvent::Type::kBookmark) return;
    std::shared_ptr<const KubeObject> object = MakeKubeObject(event.object);
    if (event.type == KubeWatchEvent::Type::kDeleted) {
      objects_.erase(KeyOf(*object));
    } else {
      objects_[KeyOf(*object)] = std::move(object);
    }
  }
  on_change_();
}

absl::Duration Reflector::WatchOnce() {
  KubeWatchRequest request;
  request.ns = options_.ns;
  request.timeout = options_.watch_timeout;
  {
    absl::MutexLock lock(&mu_);
    request.resource_version = resource_version_;
  }
  const absl::Duration started = clock_.Monotonic();
  int events = 0;
  absl::Status ended = api_->Watch(
      options_.resource, request, [this] { MarkContact(); },
      [&](const KubeWatchEvent& event) {
        ++events;
        Apply(event);
      },
      &stop_);
  if (stop_.HasBeenNotified()) return absl::ZeroDuration();
  if (IsGone(ended)) {
    // The server no longer has the history after our version: list again,
    // at once, keeping the current set until the new one replaces it.
    LogInfo("kubernetes: %s: %s; listing again", options_.resource.resource, ended.message());
    absl::MutexLock lock(&mu_);
    resource_version_.clear();
    ++health_.gone;
    return absl::ZeroDuration();
  }
  if (!ended.ok()) return Failed(ended);
  if (events == 0 && clock_.Monotonic() - started < kShortestQuietWatch) return backoff_.Next();
  backoff_.Reset();
  return absl::ZeroDuration();
}

}  // namespace holdfast
