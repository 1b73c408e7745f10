#include "src/kube/fake_kube_api.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

std::string KeyOf(const nlohmann::json& object) {
  const nlohmann::json& meta = object["metadata"];
  return absl::StrCat(meta.value("namespace", ""), "/", meta.value("name", ""));
}

bool InNamespace(const nlohmann::json& object, const std::string& ns) {
  return ns.empty() || object["metadata"].value("namespace", "") == ns;
}

// A field selector of one "FIELD=VALUE" on a top-level string field (what
// holdfast uses: Secrets by type).
bool Selected(const nlohmann::json& object, const std::string& selector) {
  if (selector.empty()) return true;
  const size_t eq = selector.find('=');
  const std::string field = selector.substr(0, eq);
  return eq != std::string::npos && object.is_object() && object.contains(field) &&
         object[field].is_string() && object[field].get<std::string>() == selector.substr(eq + 1);
}

}  // namespace

void FakeKubeApi::Record(Store& store, KubeWatchEvent::Type type, const nlohmann::json& object) {
  store.events.push_back(Event{version_, KubeWatchEvent{type, object}});
}

nlohmann::json FakeKubeApi::Put(const KubeResource& resource, nlohmann::json object) {
  absl::MutexLock lock(&mu_);
  Store& store = stores_[resource.Path("")];
  object["apiVersion"] = resource.ApiVersion();
  object["kind"] = resource.kind;
  object["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  const std::string key = KeyOf(object);
  bool existed = store.objects.contains(key);
  store.objects[key] = object;
  Record(store, existed ? KubeWatchEvent::Type::kModified : KubeWatchEvent::Type::kAdded, object);
  return object;
}

bool FakeKubeApi::Delete(const KubeResource& resource, const std::string& ns,
                         const std::string& name) {
  absl::MutexLock lock(&mu_);
  Store& store = stores_[resource.Path("")];
  auto it = store.objects.find(absl::StrCat(ns, "/", name));
  if (it == store.objects.end()) return false;
  nlohmann::json object = it->second;
  store.objects.erase(it);
  object["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  Record(store, KubeWatchEvent::Type::kDeleted, object);
  return true;
}

void FakeKubeApi::Bookmark(const KubeResource& resource) {
  absl::MutexLock lock(&mu_);
  nlohmann::json object = {{"kind", resource.kind},
                           {"apiVersion", resource.ApiVersion()},
                           {"metadata", {{"resourceVersion", absl::StrCat(version_)}}}};
  Record(stores_[resource.Path("")], KubeWatchEvent::Type::kBookmark, object);
}

void FakeKubeApi::Compact() {
  absl::MutexLock lock(&mu_);
  compacted_ = version_;
  for (auto& [path, store] : stores_) store.events.clear();
}

void FakeKubeApi::FailNext(Call call, absl::Status status) {
  absl::MutexLock lock(&mu_);
  failures_[call].push_back(std::move(status));
}

void FakeKubeApi::set_linger(absl::Duration linger) {
  absl::MutexLock lock(&mu_);
  linger_ = linger;
}

int FakeKubeApi::calls(Call call) const {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(call);
  return it == calls_.end() ? 0 : it->second;
}

std::vector<absl::Duration> FakeKubeApi::status_timeouts() const {
  absl::MutexLock lock(&mu_);
  return status_timeouts_;
}

std::string FakeKubeApi::resource_version() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(version_);
}

absl::Status FakeKubeApi::TakeFailure(Call call) {
  ++calls_[call];
  std::deque<absl::Status>& queue = failures_[call];
  if (queue.empty()) return absl::OkStatus();
  absl::Status status = queue.front();
  queue.pop_front();
  return status;
}

void FakeKubeApi::SetServed(const KubeResource& resource, bool served) {
  absl::MutexLock lock(&mu_);
  if (served) {
    not_served_.erase(resource.Path(""));
  } else {
    not_served_.insert(resource.Path(""));
  }
}

absl::StatusOr<KubeList> FakeKubeApi::List(const KubeResource& resource, const std::string& ns) {
  absl::MutexLock lock(&mu_);
  if (absl::Status failed = TakeFailure(Call::kList); !failed.ok()) return failed;
  if (not_served_.contains(resource.Path(""))) {
    return absl::NotFoundError(absl::StrCat("HTTP 404: ", resource.Path(ns), " not found"));
  }
  KubeList list;
  list.resource_version = absl::StrCat(version_);
  for (const auto& [key, object] : stores_[resource.Path("")].objects) {
    if (InNamespace(object, ns) && Selected(object, resource.field_selector)) {
      list.items.push_back(object);
    }
  }
  return list;
}

absl::Status FakeKubeApi::Watch(const KubeResource& resource, const KubeWatchRequest& request,
                                const std::function<void()>& on_open,
                                const std::function<void(const KubeWatchEvent&)>& on_event,
                                const absl::Notification* stop) {
  int64_t from = 0;
  std::vector<KubeWatchEvent> pending;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status failed = TakeFailure(Call::kWatch); !failed.ok()) return failed;
    if (not_served_.contains(resource.Path(""))) {
      return absl::NotFoundError(
          absl::StrCat("HTTP 404: ", resource.Path(request.ns), " not found"));
    }
    if (!absl::SimpleAtoi(request.resource_version, &from)) from = version_;
    if (from < compacted_) {
      return absl::OutOfRangeError(
          absl::StrCat("HTTP 410: too old resource version: ", from, " (", compacted_, ")"));
    }
  }
  on_open();
  const std::string path = resource.Path("");
  absl::Duration linger;
  {
    absl::MutexLock lock(&mu_);
    linger = linger_;
  }
  absl::Time give_up = absl::Now() + linger;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      for (const Event& e : stores_[path].events) {
        if (e.version > from && (e.event.type == KubeWatchEvent::Type::kBookmark ||
                                 (InNamespace(e.event.object, request.ns) &&
                                  Selected(e.event.object, resource.field_selector)))) {
          pending.push_back(e.event);
          from = e.version;
        }
      }
    }
    for (const KubeWatchEvent& e : pending) on_event(e);
    pending.clear();
    if (stop != nullptr && stop->HasBeenNotified()) return absl::CancelledError("stopped");
    if (absl::Now() >= give_up) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(5));
  }
}

absl::StatusOr<nlohmann::json> FakeKubeApi::Get(const KubeResource& resource, const std::string& ns,
                                                const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (absl::Status failed = TakeFailure(Call::kGet); !failed.ok()) return failed;
  const auto& objects = stores_[resource.Path("")].objects;
  auto it = objects.find(absl::StrCat(ns, "/", name));
  if (it == objects.end()) return absl::NotFoundError(absl::StrCat(ns, "/", name, " not found"));
  return it->second;
}

absl::StatusOr<nlohmann::json*> FakeKubeApi::CurrentLocked(Store& store,
                                                           const nlohmann::json& object) {
  auto it = store.objects.find(KeyOf(object));
  if (it == store.objects.end()) return absl::NotFoundError(KeyOf(object));
  if (object["metadata"].value("resourceVersion", "") !=
      it->second["metadata"].value("resourceVersion", "")) {
    return absl::AbortedError(
        absl::StrCat("HTTP 409: ", KeyOf(object), ": the object has been modified"));
  }
  return &it->second;
}

absl::StatusOr<nlohmann::json> FakeKubeApi::UpdateStatus(const KubeResource& resource,
                                                         const nlohmann::json& object,
                                                         absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  status_timeouts_.push_back(timeout);
  if (timeout < absl::Milliseconds(1)) {
    return absl::DeadlineExceededError("UpdateStatus: no time left");
  }
  if (absl::Status failed = TakeFailure(Call::kUpdateStatus); !failed.ok()) return failed;
  Store& store = stores_[resource.Path("")];
  absl::StatusOr<nlohmann::json*> current = CurrentLocked(store, object);
  if (!current.ok()) return current.status();
  nlohmann::json& stored = **current;
  stored["status"] = object.value("status", nlohmann::json::object());
  stored["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  Record(store, KubeWatchEvent::Type::kModified, stored);
  return stored;
}

absl::StatusOr<nlohmann::json> FakeKubeApi::Create(const KubeResource& resource,
                                                   const std::string& ns,
                                                   const nlohmann::json& object) {
  absl::MutexLock lock(&mu_);
  if (absl::Status failed = TakeFailure(Call::kCreate); !failed.ok()) return failed;
  Store& store = stores_[resource.Path("")];
  nlohmann::json created = object;
  created["apiVersion"] = resource.ApiVersion();
  created["kind"] = resource.kind;
  if (!ns.empty()) created["metadata"]["namespace"] = ns;
  const std::string key = KeyOf(created);
  if (store.objects.contains(key)) {
    return absl::AlreadyExistsError(absl::StrCat("HTTP 409: ", key, " already exists"));
  }
  created["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  store.objects[key] = created;
  Record(store, KubeWatchEvent::Type::kAdded, created);
  return created;
}

absl::StatusOr<nlohmann::json> FakeKubeApi::Replace(const KubeResource& resource,
                                                    const nlohmann::json& object) {
  absl::MutexLock lock(&mu_);
  if (absl::Status failed = TakeFailure(Call::kReplace); !failed.ok()) return failed;
  if (!object.contains("metadata") || !object["metadata"].is_object() ||
      object["metadata"].value("resourceVersion", "").empty()) {
    return absl::InvalidArgumentError("Replace: the object has no metadata.resourceVersion");
  }
  Store& store = stores_[resource.Path("")];
  absl::StatusOr<nlohmann::json*> current = CurrentLocked(store, object);
  if (!current.ok()) return current.status();
  nlohmann::json& stored = **current;
  nlohmann::json replaced = object;
  replaced["apiVersion"] = resource.ApiVersion();
  replaced["kind"] = resource.kind;
  if (stored.contains("status")) {
    replaced["status"] = stored["status"];  // a replace never writes the status
  } else {
    replaced.erase("status");
  }
  // As the API server: a write that changes nothing keeps the version.
  replaced["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"];
  if (replaced == stored) return stored;
  replaced["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  stored = replaced;
  Record(store, KubeWatchEvent::Type::kModified, stored);
  return stored;
}

}  // namespace holdfast
