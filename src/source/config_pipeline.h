#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/snapshot/snapshot.h"
#include "src/translate/translator.h"

namespace holdfast {

// Kind used in statuses for a translation that could not be published.
inline constexpr char kSnapshotKind[] = "Snapshot";

// The part every gateway-object source shares: translate a complete set of
// objects, build a snapshot, publish it if its version changed, and keep
// every object's status (logging the ones that turn bad). Not thread-safe:
// one source thread applies.
class ConfigPipeline {
 public:
  // `name` says where the objects came from, in logs.
  ConfigPipeline(std::string name, TranslatorOptions options, const Clock& clock,
                 MetricsRegistry* metrics, std::function<void(SnapshotPtr)> publish);

  // Translates `input`; `extra_statuses` (problems the source found before
  // translation, such as unreadable files) are merged into the statuses.
  absl::Status Apply(const TranslationInput& input, const StatusMap& extra_statuses);

  // Statuses laid over the translation's from the next Apply on (a held
  // rollout's, src/rollout): each one's reasons are added to the object's
  // status, which takes the overlay's state and serving_last_good. Only
  // objects the translation has a status for are touched. Thread-safe; the
  // source applies again soon when overlay_pending().
  void SetOverlay(StatusMap overlay);
  bool overlay_pending() const;

  // The last Apply's statuses. Thread-safe.
  StatusMap statuses() const;
  // The same without a copy.
  std::shared_ptr<const StatusMap> shared_statuses() const;
  void OnStatuses(std::function<void(const StatusMap&)> listener) {
    listener_ = std::move(listener);
  }

 private:
  const std::string name_;
  const Clock& clock_;
  MetricsRegistry* metrics_;
  std::function<void(SnapshotPtr)> publish_;
  std::function<void(const StatusMap&)> listener_;
  Counter* reloads_;
  Gauge* rejected_;
  Gauge* warned_;
  Counter* build_failures_;
  Translator translator_;
  std::string published_version_;
  // The last snapshot built, which the next one shares unchanged types with.
  SnapshotPtr last_built_;

  // A settled statuses map whose last holder let go of it (its deleter
  // puts it here, on whichever thread), for the translator to fill again:
  // cheaper than a new map per change. Shared with those deleters.
  struct SpareStatuses;
  std::shared_ptr<SpareStatuses> spare_;

  // Makes `statuses` the settled ones; returns them and the ones before.
  std::pair<std::shared_ptr<const StatusMap>, std::shared_ptr<const StatusMap>> Settle(
      StatusMap statuses);

  mutable absl::Mutex mu_;
  // The last Apply's, shared with the listener it was handed to.
  std::shared_ptr<const StatusMap> statuses_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const StatusMap>();
  StatusMap overlay_ ABSL_GUARDED_BY(mu_);
  bool overlay_pending_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace holdfast
