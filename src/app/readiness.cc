#include "src/app/readiness.h"

#include "absl/strings/str_cat.h"

namespace holdfast {
namespace {

// What is wrong with the store, or "".
std::string StoreProblem(const ConfigSource* source, const Clock& clock) {
  if (source == nullptr) return "";
  SourceHealth health = source->health();
  if (!health.connected) {
    return absl::StrCat("store unreachable for ",
                        absl::FormatDuration(
                            absl::Trunc(clock.Now() - health.disconnected_since, absl::Seconds(1))),
                        ": ", health.last_error);
  }
  if (!health.access_error.empty())
    return absl::StrCat("store refuses access: ", health.access_error);
  return "";
}

}  // namespace

Readiness ComputeReadiness(const SnapshotCache& cache, const ConfigSource* source,
                           const LastKnownGood::State& last_good, const Clock& clock) {
  Published current = cache.Current(cache.default_group());
  std::string problems = StoreProblem(source, clock);
  if (current.snapshot == nullptr) {
    std::string why = "no complete snapshot yet";
    if (!problems.empty()) absl::StrAppend(&why, "; ", problems);
    if (!last_good.restore_error.empty()) absl::StrAppend(&why, "; ", last_good.restore_error);
    return Readiness{false, why};
  }
  // Still ready: what is served is complete; but a restart could not fall
  // back on a persisted copy, which the operator must know.
  if (!last_good.persist_error.empty()) {
    absl::StrAppend(&problems, problems.empty() ? "" : "; ",
                    "cannot persist the snapshot: ", last_good.persist_error);
  }
  const Snapshot& snapshot = *current.snapshot;
  return Readiness{
      true,
      absl::StrCat("serving ", last_good.serving_persisted ? "persisted " : "", "snapshot ",
                   snapshot.version(), " from ",
                   absl::FormatTime("%Y-%m-%d %H:%M:%S", snapshot.created(), absl::UTCTimeZone()),
                   " (", snapshot.size(), " resources)", problems.empty() ? "" : ", ", problems)};
}

nlohmann::json StoreJson(const SourceHealth& health, const LastKnownGood::State& last_good,
                         const Clock& clock) {
  return {{"connected", health.connected},
          {"revision", health.revision},
          {"synced", health.synced_once},
          {"last_error", health.last_error},
          {"access_error", health.access_error},
          {"endpoint", health.endpoint},
          {"last_contact_seconds", health.last_contact == absl::Time()
                                       ? -1.0
                                       : absl::ToDoubleSeconds(clock.Now() - health.last_contact)},
          {"unreachable_seconds",
           health.connected ? 0.0 : absl::ToDoubleSeconds(clock.Now() - health.disconnected_since)},
          {"serving", last_good.serving_persisted ? "persisted"
                      : last_good.serving_live    ? "live"
                                                  : "nothing"},
          {"persisted_version", last_good.persisted ? last_good.persisted->version() : ""},
          {"written_version", last_good.written_version},
          {"restore_error", last_good.restore_error},
          {"persist_error", last_good.persist_error}};
}

}  // namespace holdfast
