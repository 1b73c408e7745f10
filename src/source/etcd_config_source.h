#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/poller.h"
#include "src/etcd/key_value_store.h"
#include "src/model/decode.h"
#include "src/source/config_pipeline.h"
#include "src/source/config_source.h"

namespace holdfast {

// The etcd key of an object's config or status: PREFIX/config/KIND/NS/NAME.
std::string ObjectStoreKey(const std::string& prefix, const std::string& section,
                           const ObjectKey& key);

// Gateway objects stored in etcd, one per key under PREFIX/config/ (see
// docs/etcd.md), translated into snapshots. Reads the store through
// KeyValueStore: EtcdClient in production, FakeKeyValueStore in unit tests.
//
// Lists every key at one revision, then watches from the next revision, so
// no change is missed or seen twice. When the watch breaks it resumes from
// the last revision seen; when that revision has been compacted it lists
// again and replaces everything it held. The watch asks for progress
// regularly, so a store that goes silent is noticed. Bursts of changes are
// translated together: while one translation runs, later events queue and
// the next translation takes them all.
//
// A key whose value does not decode, names a different object than its key,
// or holds more than one object is Rejected (the object's last accepted
// version stays in service). Store failures never stop the source: it
// retries with jittered backoff forever and keeps what it served.
class EtcdConfigSource : public ConfigSource {
 public:
  struct Options {
    std::string prefix = "/holdfast";
    TranslatorOptions translator;
    WatchOptions watch;  // prefix and start revision are set by the source
    absl::Duration min_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
  };

  // `store` and `metrics` must outlive the source.
  EtcdConfigSource(Options options, KeyValueStore* store, const Clock& clock,
                   MetricsRegistry* metrics, std::function<void(SnapshotPtr)> publish);
  ~EtcdConfigSource() override;

  void Start() override;
  void Stop() override;
  StatusMap statuses() const override { return pipeline_.statuses(); }
  SourceHealth health() const override;
  void OnStatuses(std::function<void(const StatusMap&)> listener) override {
    pipeline_.OnStatuses(std::move(listener));
  }
  void SetStatusOverlay(StatusMap overlay) override;

  // Adds the object stored at `store_key` (decoded from its value) to
  // `input`, or says why it cannot be used: in `input->invalid` when the key
  // names an object, else in `key_statuses`.
  static void AddStored(const std::string& config_prefix, const std::string& store_key,
                        const DecodedFile& decoded, TranslationInput* input,
                        StatusMap* key_statuses);
  // The object `store_key` names (CONFIG_PREFIX/KIND/NAMESPACE/NAME), or
  // nullopt if it names none.
  static std::optional<ObjectKey> ObjectKeyAt(const std::string& config_prefix,
                                              const std::string& store_key);

 private:
  struct Doc {
    std::string value;
    int64_t mod_revision = 0;
  };
  // What changed in the store since the last apply: the keys changed
  // (each with its doc, or none if deleted), or, after a listing, every
  // key (`everything`, with every doc).
  struct Changes {
    bool everything = false;
    std::map<std::string, std::optional<Doc>> docs;
    int64_t revision = 0;
  };
  void WatchLoop();
  void ApplyIfChanged();
  // The changes to apply, or nullopt if none (and no overlay) since the
  // last call.
  std::optional<Changes> TakeChanges() ABSL_LOCKS_EXCLUDED(mu_);
  // Decodes the docs whose mod revision decoded_ does not hold, on several
  // threads when many (after a listing).
  void DecodeChanged(const Changes& changes);
  // Takes what the object at `store_key` added out of input_ and
  // key_statuses_.
  void Unstore(const std::string& store_key);
  void MarkConnected(int64_t revision);
  void MarkDisconnected(const absl::Status& status);
  void Sleep(absl::Duration d) { stop_.WaitForNotificationWithTimeout(d); }

  const Options options_;
  const std::string config_prefix_;
  KeyValueStore* store_;
  const Clock& clock_;
  // Used by the apply thread only (statuses() and SetOverlay() are thread-safe).
  ConfigPipeline pipeline_;
  Counter* relists_;
  Counter* store_errors_;
  MetricsRegistry* metrics_;
  int collector_ = 0;
  Gauge* revision_gauge_;

  mutable absl::Mutex mu_;
  std::map<std::string, Doc> docs_ ABSL_GUARDED_BY(mu_);
  int64_t docs_revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  // What changed since the last apply (Changes).
  bool relisted_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> changed_keys_ ABSL_GUARDED_BY(mu_);
  SourceHealth health_ ABSL_GUARDED_BY(mu_);

  // Apply thread only: decoded values by key, reused while the key's
  // mod revision holds.
  std::map<std::string, std::pair<int64_t, DecodedFile>> decoded_;
  // Apply thread only: the input and statuses of the keys applied, changed
  // key by key, so that a change to one of 10,000 objects neither copies
  // nor looks at the others.
  TranslationInput input_;
  StatusMap key_statuses_;

  absl::Notification stop_;
  std::thread watcher_;  // blocks in the store's watch
  Poller applier_;       // translates when dirty_ (woken), else looks every 200 ms
};

}  // namespace holdfast
