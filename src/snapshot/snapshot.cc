#include "src/snapshot/snapshot.h"

#include <algorithm>
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

// VersionOf over the map's resources, in name order.
std::string VersionOfMap(const ResourceMap& resources) {
  std::string input;
  input.reserve(resources.size() * 48);
  for (const auto& [name, r] : resources) AppendNameVersion(name, *r, &input);
  return ContentDigest(input);
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
  absl::string_view type;  // in the first resource's type_url
  std::vector<ResourcePtr> resources;
};

// Resources grouped by type, each group in the order given.
std::vector<TypeRun> GroupByType(std::vector<ResourcePtr> resources) {
  std::vector<TypeRun> runs;
  for (ResourcePtr& resource : resources) {
    const absl::string_view type = resource->type_url();
    auto run = std::find_if(runs.begin(), runs.end(),
                            [&](const TypeRun& known) { return known.type == type; });
    if (run == runs.end()) run = runs.insert(runs.end(), TypeRun{type, {}});
    run->resources.push_back(std::move(resource));
  }
  return runs;
}

// Whether `before` holds what `resources` hold, in the same order: the same
// objects, or objects of the same version (a digest of type, name and
// bytes: a service translated again makes new objects of equal content).
bool SameResources(const ResourceMap& before, const std::vector<ResourcePtr>& resources) {
  if (before.size() != resources.size()) return false;
  auto it = before.begin();
  for (const ResourcePtr& resource : resources) {
    const ResourcePtr& kept = it++->second;
    if (kept != resource && kept->version() != resource->version()) return false;
  }
  return true;
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
  const std::string* last_target = nullptr;  // most resources name the same types
  for (const ResourcePtr& resource : resources) {
    for (const ResourceRef& ref : resource->references()) {
      if (last_target != nullptr && *last_target == ref.type_url) continue;
      last_target = &*made->targets.insert(ref.type_url).first;
    }
  }
  absl::StatusOr<ResourceMap> map = ResourceMap::Of(std::move(resources));
  if (!map.ok()) return map.status();
  made->resources = *std::move(map);
  made->version = VersionOfMap(made->resources);
  return made;
}

absl::StatusOr<std::set<std::string>> Snapshot::Index(std::vector<ResourcePtr> resources,
                                                      const Snapshot* previous) {
  size_ = resources.size();
  std::set<std::string> unchanged;
  for (TypeRun& run : GroupByType(std::move(resources))) {
    auto before = previous == nullptr ? by_type_.end() : previous->by_type_.find(run.type);
    if (previous != nullptr && before != previous->by_type_.end() &&
        SameResources(before->second->resources, run.resources)) {
      by_type_.emplace(before->first, before->second);
      unchanged.insert(before->first);
      continue;
    }
    absl::StatusOr<OfTypePtr> made = MakeOfType(std::move(run.resources));
    if (!made.ok()) return made.status();
    by_type_.emplace(std::string(run.type), *std::move(made));
  }
  return unchanged;
}

absl::Status Snapshot::CheckReferences(const std::set<std::string>& unchanged) const {
  std::vector<std::string> dangling;
  for (const auto& [type, of_type] : by_type_) {
    // The snapshot before was consistent: what refers only among types
    // that did not change still resolves.
    if (unchanged.contains(type) &&
        std::all_of(of_type->targets.begin(), of_type->targets.end(),
                    [&](const std::string& target) { return unchanged.contains(target); })) {
      continue;
    }
    absl::string_view target_type;
    const ResourceMap* targets = nullptr;
    ResourceMap::const_iterator cursor;
    for (const auto& [name, resource] : of_type->resources) {
      for (const ResourceRef& ref : resource->references()) {
        if (targets == nullptr || ref.type_url != target_type) {
          target_type = ref.type_url;
          targets = &Resources(ref.type_url);
          cursor = targets->begin();
        }
        if (!ContainsNear(*targets, ref.name, cursor)) {
          dangling.push_back(absl::StrCat(TypeNameOf(type), " \"", name, "\" field ",
                                          ref.field_path, " names ", TypeNameOf(ref.type_url),
                                          " \"", ref.name, "\", which is not in the snapshot"));
        }
      }
    }
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
  // Without policies the version is what it always was: replicas of
  // different releases agree on it.
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
  absl::StatusOr<std::set<std::string>> unchanged =
      snapshot->Index(std::move(resources), previous);
  if (!unchanged.ok()) return unchanged.status();
  if (absl::Status consistent = snapshot->CheckReferences(*unchanged); !consistent.ok()) {
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
  return it == by_type_.end() ? VersionOf({}) : it->second->version;
}

std::vector<std::string> Snapshot::TypeUrls() const {
  std::vector<std::string> urls;
  for (const auto& [type, of_type] : by_type_) urls.push_back(type);
  return urls;
}

}  // namespace holdfast
