#include "src/snapshot/snapshot.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/snapshot/references.h"

namespace holdfast {
namespace {

const ResourceMap& EmptyMap() {
  static const ResourceMap* empty = new ResourceMap();
  return *empty;
}

// One line of a version's digest input.
void AppendNameVersion(absl::string_view name, const Resource& resource, std::string* input) {
  absl::StrAppend(input, name, "\t", resource.version(), "\n");
}

// Whether `name` is in `map`, looking first just after the last name found
// (`cursor`): references are mostly met in the order of what they name
// (clusters and their load assignments, listeners and their routes), so
// most lookups cost a comparison or two instead of a search.
bool ContainsNear(const ResourceMap& map, const std::string& name,
                  ResourceMap::const_iterator& cursor) {
  for (int step = 0; step < 2 && cursor != map.end(); ++step, ++cursor) {
    if (cursor->first == name) return true;
  }
  cursor = map.find(name);
  return cursor != map.end();
}

struct TypeRun {
  absl::string_view type;  // type_url::kKnownTypes', or the first resource's type_url
  std::vector<ResourcePtr> resources;
};

// The index in `runs` of the run of `type`, added if there is none (sized
// as the type is in `previous`, or null).
size_t RunOf(absl::string_view type, const Snapshot* previous, std::vector<TypeRun>& runs) {
  auto run = std::find_if(runs.begin(), runs.end(),
                          [&](const TypeRun& known) { return known.type == type; });
  if (run != runs.end()) return run - runs.begin();
  runs.push_back(TypeRun{type, {}});
  if (previous != nullptr) runs.back().resources.reserve(previous->Resources(type).size());
  return runs.size() - 1;
}

// Resources grouped by type, each group in the order given, the groups in
// the order of their first resource. Known types are told by index, not by
// reading a type URL (a second cache miss per resource).
std::vector<TypeRun> GroupByType(std::vector<ResourcePtr> resources, const Snapshot* previous) {
  std::vector<TypeRun> runs;
  std::array<size_t, type_url::kKnownTypes.size()> known_run;
  known_run.fill(SIZE_MAX);  // none yet
  for (ResourcePtr& resource : resources) {
    const uint8_t index = resource->type_index();
    size_t run;
    if (index == type_url::kUnknownType) {
      run = RunOf(resource->type_url(), previous, runs);
    } else {
      if (known_run[index] == SIZE_MAX) {
        known_run[index] = RunOf(type_url::kKnownTypes[index], previous, runs);
      }
      run = known_run[index];
    }
    runs[run].resources.push_back(std::move(resource));
  }
  return runs;
}

// Adds the types `resources` refer to.
void AddTargets(const std::vector<ResourcePtr>& resources, std::set<std::string>& targets) {
  const std::string* last_target = nullptr;  // most resources name the same types
  for (const ResourcePtr& resource : resources) {
    for (const ResourceRef& ref : resource->references()) {
      if (last_target != nullptr && *last_target == ref.type_url) continue;
      last_target = &*targets.insert(ref.type_url).first;
    }
  }
}

}  // namespace

std::string VersionOf(const std::vector<ResourcePtr>& resources) {
  std::string input;
  input.reserve(resources.size() * 48);
  for (const ResourcePtr& r : resources) AppendNameVersion(r->name(), *r, &input);
  return ContentDigest(input);
}

absl::StatusOr<Snapshot::OfTypePtr> Snapshot::MakeOfType(std::vector<ResourcePtr> resources) {
  auto made = std::make_shared<OfType>();
  AddTargets(resources, made->targets);
  absl::StatusOr<ResourceMap> map = ResourceMap::Of(std::move(resources));
  if (!map.ok()) return map.status();
  made->resources = *std::move(map);
  made->version = made->resources.version_sum().Digest();
  return made;
}

Snapshot::OfTypePtr Snapshot::PatchedOfType(const OfType& before, ResourceMap::Patch& patch) {
  auto made = std::make_shared<OfType>();
  // What the remaining resources refer to is among the types before's did.
  made->targets = before.targets;
  AddTargets(patch.added, made->targets);
  made->resources = std::move(patch.map);
  made->version = made->resources.version_sum().Digest();
  return made;
}

absl::StatusOr<Snapshot::Changes> Snapshot::Index(std::vector<ResourcePtr> resources,
                                                  const Snapshot* previous) {
  size_ = resources.size();
  Changes changes;
  for (TypeRun& run : GroupByType(std::move(resources), previous)) {
    auto before = previous == nullptr ? by_type_.end() : previous->by_type_.find(run.type);
    std::optional<ResourceMap::Patch> patch;
    if (previous != nullptr && before != previous->by_type_.end()) {
      patch = ResourceMap::Patched(before->second->resources, run.resources);
    }
    if (patch.has_value() && patch->unchanged()) {
      by_type_.emplace(before->first, before->second);
      continue;
    }
    TypeChange& change = changes[std::string(run.type)];
    if (patch.has_value()) {
      by_type_.emplace(before->first, PatchedOfType(*before->second, *patch));
      change.names_removed = patch->names_removed;
      change.added = std::move(patch->added);
      continue;
    }
    change.rebuilt = true;
    absl::StatusOr<OfTypePtr> made = MakeOfType(std::move(run.resources));
    if (!made.ok()) return made.status();
    by_type_.emplace(std::string(run.type), *std::move(made));
  }
  if (previous != nullptr) {
    for (const auto& [type, of_type] : previous->by_type_) {
      if (!by_type_.contains(type)) changes[type].names_removed = true;  // every one
    }
  }
  return changes;
}

absl::Status Snapshot::CheckReferences(const Changes& changes) const {
  auto names_kept = [&](const std::string& type) {
    auto change = changes.find(type);
    return change == changes.end() || (!change->second.rebuilt && !change->second.names_removed);
  };
  std::vector<std::string> dangling;
  absl::string_view target_type;
  const ResourceMap* targets = nullptr;
  ResourceMap::const_iterator cursor;
  auto check = [&](absl::string_view type, const std::string& name, const Resource& resource) {
    for (const ResourceRef& ref : resource.references()) {
      if (targets == nullptr || ref.type_url != target_type) {
        target_type = ref.type_url;
        targets = &Resources(ref.type_url);
        cursor = targets->begin();
      }
      if (!ContainsNear(*targets, ref.name, cursor)) {
        dangling.push_back(absl::StrCat(TypeNameOf(type), " \"", name, "\" field ", ref.field_path,
                                        " names ", TypeNameOf(ref.type_url), " \"", ref.name,
                                        "\", which is not in the snapshot"));
      }
    }
  };
  for (const auto& [type, of_type] : by_type_) {
    auto change = changes.find(type);
    // The snapshot before was consistent: while no name its resources could
    // refer to has gone, only what changed can dangle.
    if (std::all_of(of_type->targets.begin(), of_type->targets.end(), names_kept)) {
      if (change == changes.end()) continue;
      if (!change->second.rebuilt) {
        for (const ResourcePtr& added : change->second.added) check(type, added->name(), *added);
        continue;
      }
    }
    for (const auto& [name, resource] : of_type->resources) check(type, name, *resource);
  }
  if (dangling.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("inconsistent snapshot: ", absl::StrJoin(dangling, "; ")));
}

void Snapshot::ComputeVersion() {
  std::string all_versions;
  for (const auto& [type, of_type] : by_type_) {
    absl::StrAppend(&all_versions, type, "\t", of_type->version, "\n");
  }
  // Without policies nothing is added: the version depends on the
  // resources alone, as it did before policies existed.
  if (!rollouts_.empty()) {
    absl::StrAppend(&all_versions, "rollouts\t", EncodeRollouts(rollouts_), "\n");
  }
  version_ = ContentDigest(all_versions);
}

absl::StatusOr<SnapshotPtr> Snapshot::Build(std::vector<ResourcePtr> resources, absl::Time created,
                                            ConfiguredRollouts rollouts,
                                            const Snapshot* previous) {
  auto snapshot = std::shared_ptr<Snapshot>(new Snapshot());
  snapshot->created_ = created;
  snapshot->rollouts_ = std::move(rollouts);
  absl::StatusOr<Changes> changes = snapshot->Index(std::move(resources), previous);
  if (!changes.ok()) return changes.status();
  if (absl::Status consistent = snapshot->CheckReferences(*changes); !consistent.ok()) {
    return consistent;
  }
  snapshot->ComputeVersion();
  return snapshot;
}

const ResourceMap& Snapshot::Resources(absl::string_view type_url) const {
  auto it = by_type_.find(type_url);
  return it == by_type_.end() ? EmptyMap() : it->second->resources;
}

std::string Snapshot::TypeVersion(absl::string_view type_url) const {
  auto it = by_type_.find(type_url);
  return it == by_type_.end() ? VersionSum().Digest() : it->second->version;
}

std::vector<std::string> Snapshot::TypeUrls() const {
  std::vector<std::string> urls;
  for (const auto& [type, of_type] : by_type_) urls.push_back(type);
  return urls;
}

}  // namespace holdfast
