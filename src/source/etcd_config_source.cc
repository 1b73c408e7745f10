#include "src/source/etcd_config_source.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/common/backoff.h"
#include "src/common/log.h"
#include "src/common/parallel_for.h"
#include "src/source/config_files.h"

namespace holdfast {

std::string ObjectStoreKey(const std::string& prefix, const std::string& section,
                           const ObjectKey& key) {
  return absl::StrCat(prefix, "/", section, "/", key.kind, "/", key.ns, "/", key.name);
}

EtcdConfigSource::EtcdConfigSource(Options options, KeyValueStore* store, const Clock& clock,
                                   MetricsRegistry* metrics,
                                   std::function<void(SnapshotPtr)> publish)
    : options_(std::move(options)),
      config_prefix_(options_.prefix + "/config/"),
      store_(store),
      clock_(clock),
      pipeline_(absl::StrCat("etcd ", options_.prefix), options_.translator, clock, metrics,
                std::move(publish)),
      relists_(metrics->GetCounter("holdfast_source_relists_total",
                                   "Full listings of the store (start, compaction)")),
      store_errors_(metrics->GetCounter("holdfast_store_errors_total",
                                        "Failed list or watch attempts against the store")),
      metrics_(metrics),
      revision_gauge_(
          metrics->GetGauge("holdfast_store_revision", "Store revision of the config in use")) {
  health_.disconnected_since = clock_.Now();
  health_.last_error = "not connected yet";
  collector_ = metrics_->AddCollector([this](MetricWriter& out) {
    SourceHealth now = health();
    out.Sample("holdfast_store_connected", "1 while the config store answers", "gauge", {},
               now.connected ? 1 : 0);
    out.Sample("holdfast_store_access_denied",
               "1 while the config store refuses this replica's credentials or permissions",
               "gauge", {}, now.access_error.empty() ? 0 : 1);
  });
}

EtcdConfigSource::~EtcdConfigSource() {
  Stop();
  metrics_->RemoveCollector(collector_);
}

void EtcdConfigSource::Start() {
  watcher_ = std::thread([this] { WatchLoop(); });
  applier_.Start(absl::Milliseconds(200), [this] { ApplyIfChanged(); });
}

void EtcdConfigSource::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (watcher_.joinable()) watcher_.join();
  applier_.Stop();
}

SourceHealth EtcdConfigSource::health() const {
  SourceHealth health;
  {
    absl::MutexLock lock(&mu_);
    health = health_;
  }
  // Every call of the client counts (lease renewals every retry period,
  // status writes), so a store that went silent shows within a call timeout
  // even while the watch still waits for its stall deadline.
  KeyValueStore::Contact contact = store_->contact();
  health.access_error = contact.refused;
  health.endpoint = store_->current_endpoint();
  if (health.connected && contact.failing && contact.since_success > store_->call_timeout()) {
    health.connected = false;
    health.last_error = contact.last_error;
    health.disconnected_since = clock_.Now() - contact.since_success;
  }
  return health;
}

void EtcdConfigSource::MarkConnected(int64_t revision) {
  absl::MutexLock lock(&mu_);
  if (!health_.connected) {
    LogInfo("etcd: connected to %s at revision %d (store was unreachable for %s)",
            store_->current_endpoint(), revision,
            absl::FormatDuration(
                absl::Trunc(clock_.Now() - health_.disconnected_since, absl::Milliseconds(100))));
  }
  health_.connected = true;
  health_.last_contact = clock_.Now();
  health_.last_error.clear();
}

void EtcdConfigSource::MarkDisconnected(const absl::Status& status) {
  store_errors_->Increment();
  absl::MutexLock lock(&mu_);
  if (health_.connected) {
    health_.disconnected_since = clock_.Now();
    LogWarning("etcd: store unreachable, serving what was last read (revision %d): %s",
               health_.revision, status.message());
  }
  health_.connected = false;
  health_.last_error = std::string(status.message());
}

void EtcdConfigSource::WatchLoop() {
  Backoff backoff(options_.min_backoff, options_.max_backoff);
  while (!stop_.HasBeenNotified()) {
    absl::StatusOr<RangeResult> listing = store_->GetPrefix(config_prefix_, /*revision=*/0);
    if (!listing.ok()) {
      MarkDisconnected(listing.status());
      Sleep(backoff.Next());
      continue;
    }
    relists_->Increment();
    MarkConnected(listing->revision);
    backoff.Reset();
    int64_t revision = listing->revision;
    {
      absl::MutexLock lock(&mu_);
      docs_.clear();
      for (const KeyValue& kv : listing->kvs) docs_[kv.key] = Doc{kv.value, kv.mod_revision};
      docs_revision_ = revision;
      relisted_ = true;
      changed_keys_.clear();
      dirty_ = true;
      applier_.Wake();
    }

    while (!stop_.HasBeenNotified()) {
      WatchOptions watch = options_.watch;
      watch.prefix = config_prefix_;
      watch.start_revision = revision + 1;
      absl::Status ended = store_->Watch(
          watch,
          [&](const WatchBatch& batch) {
            MarkConnected(batch.revision);
            backoff.Reset();
            absl::MutexLock lock(&mu_);
            for (const WatchEvent& event : batch.events) {
              if (!relisted_) changed_keys_.insert(event.kv.key);
              if (event.type == WatchEvent::Type::kDelete) {
                docs_.erase(event.kv.key);
              } else {
                docs_[event.kv.key] = Doc{event.kv.value, event.kv.mod_revision};
              }
            }
            // Resume after the last event seen; only a progress notification
            // (no events) vouches for its header revision as a whole.
            revision =
                std::max(revision, batch.events.empty() ? batch.revision
                                                        : batch.events.back().kv.mod_revision);
            if (batch.events.empty()) {
              health_.revision = std::max(health_.revision, revision);
              revision_gauge_->Set(static_cast<double>(health_.revision));
            } else {
              docs_revision_ = revision;
              dirty_ = true;
              applier_.Wake();
            }
          },
          &stop_, /*compacted_revision=*/nullptr);
      if (stop_.HasBeenNotified()) return;
      if (absl::IsOutOfRange(ended)) {
        LogWarning("etcd: %s; listing everything again", ended.message());
        break;  // list again, at once
      }
      MarkDisconnected(ended);
      Sleep(backoff.Next());
    }
  }
}

void EtcdConfigSource::SetStatusOverlay(StatusMap overlay) {
  pipeline_.SetOverlay(std::move(overlay));
  absl::MutexLock lock(&mu_);
  dirty_ = true;  // translate again: the apply step reports statuses
  applier_.Wake();
}

void EtcdConfigSource::ApplyIfChanged() {
  std::optional<Changes> changes = TakeChanges();
  if (!changes.has_value()) return;
  if (changes->everything) {
    input_ = TranslationInput();
    key_statuses_.clear();
    std::erase_if(decoded_,
                  [&](const auto& entry) { return !changes->docs.contains(entry.first); });
  }
  DecodeChanged(*changes);
  for (const auto& [key, doc] : changes->docs) {
    if (!changes->everything) Unstore(key);
    if (doc.has_value()) {
      AddStored(config_prefix_, key, decoded_.at(key).second, &input_, &key_statuses_);
    } else {
      decoded_.erase(key);
    }
  }
  (void)pipeline_.Apply(input_, key_statuses_);
  absl::MutexLock lock(&mu_);
  health_.revision = std::max(health_.revision, changes->revision);
  health_.synced_once = true;
  revision_gauge_->Set(static_cast<double>(health_.revision));
}

std::optional<EtcdConfigSource::Changes> EtcdConfigSource::TakeChanges() {
  Changes changes;
  absl::MutexLock lock(&mu_);
  if (!dirty_) return std::nullopt;
  dirty_ = false;
  changes.revision = docs_revision_;
  changes.everything = std::exchange(relisted_, false);
  if (changes.everything) {
    for (const auto& [key, doc] : docs_) changes.docs.emplace_hint(changes.docs.end(), key, doc);
    return changes;
  }
  for (const std::string& key : changed_keys_) {
    auto doc = docs_.find(key);
    changes.docs.emplace_hint(changes.docs.end(), key,
                              doc == docs_.end() ? std::nullopt : std::optional<Doc>(doc->second));
  }
  changed_keys_.clear();
  return changes;
}

void EtcdConfigSource::DecodeChanged(const Changes& changes) {
  std::vector<std::pair<const std::string*, const Doc*>> stale;
  for (const auto& [key, doc] : changes.docs) {
    if (!doc.has_value()) continue;  // deleted
    auto cached = decoded_.find(key);
    if (cached == decoded_.end() || cached->second.first != doc->mod_revision) {
      stale.emplace_back(&key, &*doc);
    }
  }
  // Values decode independently; after a listing there may be 10,000.
  const int threads = ThreadsFor(stale.size(), options_.translator.threads);
  std::vector<DecodedFile> decoded(stale.size());
  ParallelFor(stale.size(), threads, [&](size_t i) {
    decoded[i] = DecodeObjects(stale[i].second->value, *stale[i].first);
  });
  for (size_t i = 0; i < stale.size(); ++i) {
    decoded_.insert_or_assign(*stale[i].first,
                              std::pair{stale[i].second->mod_revision, std::move(decoded[i])});
  }
}

void EtcdConfigSource::Unstore(const std::string& store_key) {
  key_statuses_.erase(ObjectKey{kFileKind, "", store_key});
  if (std::optional<ObjectKey> key = ObjectKeyAt(config_prefix_, store_key)) {
    input_.objects.erase(*key);
    input_.invalid.erase(*key);
  }
}

std::optional<ObjectKey> EtcdConfigSource::ObjectKeyAt(const std::string& config_prefix,
                                                      const std::string& store_key) {
  std::vector<std::string> parts = absl::StrSplit(
      absl::string_view(store_key).substr(std::min(store_key.size(), config_prefix.size())), '/');
  if (!absl::StartsWith(store_key, config_prefix) || parts.size() != 3 || parts[0].empty() ||
      parts[1].empty() || parts[2].empty()) {
    return std::nullopt;
  }
  return ObjectKey{parts[0], parts[1], parts[2]};
}

void EtcdConfigSource::AddStored(const std::string& config_prefix, const std::string& store_key,
                                 const DecodedFile& decoded, TranslationInput* input,
                                 StatusMap* key_statuses) {
  SourceLocation at{store_key, 0};
  std::optional<ObjectKey> object_key = ObjectKeyAt(config_prefix, store_key);
  if (!object_key.has_value()) {
    ObjectKey key{kFileKind, "", store_key};
    ObjectStatus& status = (*key_statuses)[key];
    status.key = key;
    status.location = at;
    status.Reject(
        "", absl::StrCat("not an object key: expected ", config_prefix, "KIND/NAMESPACE/NAME"), at);
    return;
  }
  const ObjectKey& key = *object_key;
  std::vector<FieldError>& invalid = input->invalid[key];
  if (decoded.syntax_error) {
    invalid.push_back(
        FieldError{"", decoded.syntax_error->message, decoded.syntax_error->location});
  } else if (decoded.objects.size() != 1) {
    invalid.push_back(FieldError{
        "", absl::StrCat("holds ", decoded.objects.size(), " objects; a key holds exactly one"),
        at});
  } else {
    const DecodedObject& object = decoded.objects.front();
    if (object.key && *object.key != key) {
      invalid.push_back(FieldError{"metadata",
                                   absl::StrCat("the key names ", key.ToString(),
                                                " but the object is ", object.key->ToString()),
                                   object.location});
    } else if (object.object && object.key) {
      input->objects.emplace(key, *object.object);
    } else {
      invalid = object.errors.errors();
      if (invalid.empty()) invalid.push_back(FieldError{"", "cannot be decoded", at});
    }
  }
  if (invalid.empty()) input->invalid.erase(key);
}

}  // namespace holdfast
